package dev.idem.cli.queue;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.kafka.KafkaIdempotentConsumer;
import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.kafka.KafkaTransport;
import dev.idem.outbox.Intent;
import dev.idem.outbox.spi.IntentTransport;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * {@link LabBroker} on Kafka with the plain Java client. A destination is a topic with one
 * partition (and {@code <topic>.dead} for dead letters); the two variants are two consumer groups
 * ({@code <topic>.naive}, {@code <topic>.protected}), so each reads every record. "Unacknowledged"
 * is Kafka's uncommitted offset: a member that dies before committing leaves the record to the
 * group's next member, once the broker has noticed the death (the lab's session timeout: 6 s).
 */
final class KafkaLabBroker implements LabBroker {

  /** The shortest session timeout a broker accepts by default: how soon a killed member's partition moves. */
  private static final int SESSION_TIMEOUT_MS = 6000;

  private final String servers;
  private final Admin admin;
  private final String clusterId;
  private final int brokers;
  private final KafkaProducer<byte[], byte[]> producer;
  private KafkaTransport transport;

  private KafkaLabBroker(String servers, Admin admin, String clusterId, int brokers) {
    this.servers = servers;
    this.admin = admin;
    this.clusterId = clusterId;
    this.brokers = brokers;
    this.producer = new KafkaProducer<>(KafkaTransport.idempotent(producerConfig(servers)));
  }

  private static Map<String, Object> producerConfig(String servers) {
    return Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers, ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000",
        ProducerConfig.LINGER_MS_CONFIG, "0");
  }

  static KafkaLabBroker connect(String servers) throws Unavailable {
    Admin admin = null;
    try {
      admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, servers,
          AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000", AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000"));
      DescribeClusterResult cluster = admin.describeCluster();
      String id = cluster.clusterId().get(6, TimeUnit.SECONDS);
      int nodes = cluster.nodes().get(6, TimeUnit.SECONDS).size();
      return new KafkaLabBroker(servers, admin, id, nodes);
    } catch (Exception e) {
      if (admin != null) {
        admin.close(Duration.ZERO);
      }
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new Unavailable("cannot connect to Kafka at " + servers + ": " + e, e);
    }
  }

  @Override
  public String kind() {
    return "kafka";
  }

  @Override
  public String url() {
    return servers;
  }

  @Override
  public String describe() {
    return "Kafka (cluster " + clusterId + ", " + brokers + " broker" + (brokers == 1 ? "" : "s")
        + "; client " + AppInfoParser.getVersion() + ")";
  }

  @Override
  public boolean dedupesById() {
    return false; // the idempotent producer dedupes its own retries only, not a second publish
  }

  private static String group(String destination, String variant) {
    return destination + "." + variant;
  }

  @Override
  public void declare(String destination) throws Exception {
    admin.createTopics(List.of(new NewTopic(destination, 1, (short) 1), new NewTopic(destination + ".dead", 1, (short) 1)))
        .all().get(30, TimeUnit.SECONDS);
  }

  @Override
  public void delete(String destination) {
    try {
      admin.deleteConsumerGroups(List.of(group(destination, NAIVE), group(destination, PROTECTED)))
          .all().get(10, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // best effort: a group that never committed does not exist
    }
    try {
      admin.deleteTopics(List.of(destination, destination + ".dead")).all().get(10, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // best effort: the broker may be gone already
    }
  }

  @Override
  public Intent intent(String destination, byte[] body) {
    return Intent.kafka(destination, body).withHeader("content-type", "application/json");
  }

  @Override
  public synchronized IntentTransport transport() {
    if (transport == null) {
      transport = new KafkaTransport(producerConfig(servers), Duration.ofSeconds(15));
    }
    return transport;
  }

  @Override
  public void publish(String destination, String messageId, byte[] body) throws Exception {
    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(destination, messageId.getBytes(StandardCharsets.UTF_8), body);
    r.headers().add(KafkaTransport.ID_HEADER, messageId.getBytes(StandardCharsets.UTF_8));
    r.headers().add("content-type", "application/json".getBytes(StandardCharsets.UTF_8));
    producer.send(r).get(15, TimeUnit.SECONDS);
  }

  /** Records in the topic (both groups read the same ones). */
  @Override
  public long stored(String destination) throws Exception {
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerConfig(null))) {
      TopicPartition tp = new TopicPartition(destination, 0);
      return c.endOffsets(List.of(tp)).get(tp) - c.beginningOffsets(List.of(tp)).get(tp);
    }
  }

  private Map<String, Object> consumerConfig(String group) {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
    if (group != null) {
      c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    }
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(SESSION_TIMEOUT_MS));
    c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "1");
    return c;
  }

  private static InboundMessage message(ConsumerRecord<byte[], byte[]> r, int deliveryCount) {
    Map<String, String> headers = new HashMap<>();
    for (Header h : r.headers()) {
      headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
    }
    return new InboundMessage(headers.get(KafkaTransport.ID_HEADER), headers, r.value() == null ? new byte[0] : r.value(),
        deliveryCount, "topic '" + r.topic() + "' offset " + r.offset());
  }

  @Override
  public InboundMessage takeWithoutAck(String destination, String variant, Duration wait) {
    // left open: a member of the variant's group that holds the partition and never commits
    KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerConfig(group(destination, variant)));
    c.subscribe(List.of(destination));
    long deadline = System.nanoTime() + wait.toNanos();
    while (System.nanoTime() < deadline) {
      for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
        return message(r, 1);
      }
    }
    throw new IllegalStateException("no record in " + destination + " within " + wait.toMillis() + " ms");
  }

  @Override
  public Consumption consumeNaive(String destination, NaiveHandler handler, int expected, Duration wait) throws Exception {
    AtomicInteger deliveries = new AtomicInteger();
    List<String> problems = new CopyOnWriteArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerConfig(group(destination, NAIVE)))) {
      c.subscribe(List.of(destination));
      long deadline = System.nanoTime() + wait.toNanos();
      long extra = -1;
      while (System.nanoTime() < deadline && (extra < 0 || System.nanoTime() < extra)) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
          deliveries.incrementAndGet();
          try {
            handler.handle(message(r, 0)); // the effect, then the offset commit
          } catch (Exception e) {
            problems.add("naive handler failed: " + e);
          }
          c.commitSync(Map.of(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1)));
        }
        if (extra < 0 && deliveries.get() >= expected) {
          extra = System.nanoTime() + Duration.ofMillis(500).toNanos();
        }
      }
    } catch (WakeupException ignored) {
      // not woken by anyone
    }
    return new Consumption(deliveries.get(), List.copyOf(problems));
  }

  @Override
  public Consumption consumeProtected(String destination, IdempotentConsumer consumer, int expected, Duration wait)
      throws Exception {
    AtomicInteger deliveries = new AtomicInteger();
    List<String> problems = new CopyOnWriteArrayList<>();
    KafkaIdempotentConsumer running = KafkaIdempotentConsumer.builder(consumerConfig(group(destination, PROTECTED)),
            List.of(destination), consumer)
        .deadLetter(KafkaRecordHandler.DeadLetter.toTopic(producer, destination + ".dead"))
        .onVerdict((m, v) -> {
          if (v.action() != Verdict.Action.ACK) {
            problems.add(v.action() + ": " + v.reason());
          }
          deliveries.incrementAndGet();
        })
        .build();
    try {
      running.start();
      RabbitMqLabBroker.await(deliveries, expected, wait);
    } finally {
      running.close();
    }
    return new Consumption(deliveries.get(), List.copyOf(problems));
  }

  @Override
  public void close() {
    if (transport != null) {
      transport.close();
    }
    producer.close(Duration.ofSeconds(5));
    admin.close(Duration.ofSeconds(5));
  }
}
