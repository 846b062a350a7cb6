package dev.idem.outbox;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.kafka.KafkaBroker;
import dev.idem.kafka.KafkaIdempotentConsumer;
import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.kafka.KafkaTransport;
import dev.idem.outbox.spi.IntentTransport;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka for the contract: the in-process KRaft broker ({@link KafkaBroker}); per test a topic with
 * one partition, its dead-letter topic and a consumer group of their own, deleted afterwards.
 */
final class KafkaFixture implements BrokerFixture {

  private final String servers;
  private final String topic;
  private final String deadTopic;
  private final String group;
  private final KafkaTransport transport;
  private final KafkaProducer<byte[], byte[]> producer;

  KafkaFixture() throws Exception {
    servers = KafkaBroker.bootstrapServers();
    topic = KafkaBroker.uniqueTopic("idem-test");
    deadTopic = topic + ".DLT";
    group = topic + "-group";
    KafkaBroker.createTopics(1, topic, deadTopic);
    Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers,
        ProducerConfig.MAX_BLOCK_MS_CONFIG, "1000", ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "5000",
        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000", ProducerConfig.LINGER_MS_CONFIG, "0");
    transport = new KafkaTransport(config, Duration.ofSeconds(10));
    producer = new KafkaProducer<>(KafkaTransport.idempotent(config));
  }

  @Override
  public boolean dedupesById() {
    return false;
  }

  @Override
  public Intent intent(byte[] body) {
    return Intent.kafka(topic, body).withHeader("content-type", "application/json");
  }

  @Override
  public Intent unroutableIntent(byte[] body) {
    return Intent.kafka(topic + "-nobody-made-this", body);
  }

  @Override
  public IntentTransport transport() {
    return transport;
  }

  @Override
  public List<Received> published(int atLeast, Duration wait) throws Exception {
    return read(topic, atLeast, wait);
  }

  private List<Received> read(String from, int atLeast, Duration wait) {
    List<Received> out = new ArrayList<>();
    long deadline = System.nanoTime() + wait.toNanos();
    try (KafkaConsumer<byte[], byte[]> c = KafkaBroker.reader()) {
      c.assign(KafkaBroker.partitions(c, from));
      c.seekToBeginning(c.assignment());
      while (true) {
        ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(200));
        for (ConsumerRecord<byte[], byte[]> r : records) {
          Map<String, String> headers = new HashMap<>();
          for (Header h : r.headers()) {
            headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
          }
          out.add(new Received(headers.get(KafkaTransport.ID_HEADER), r.value(), headers));
        }
        boolean caughtUp = c.endOffsets(c.assignment()).entrySet().stream()
            .allMatch(e -> c.position(e.getKey()) >= e.getValue());
        if ((out.size() >= atLeast && caughtUp) || System.nanoTime() > deadline) {
          return out;
        }
      }
    }
  }

  @Override
  public void publishRaw(String id, byte[] body) throws Exception {
    RecordHeaders headers = new RecordHeaders();
    if (id != null) {
      headers.add(KafkaTransport.ID_HEADER, id.getBytes(StandardCharsets.UTF_8));
    }
    producer.send(new ProducerRecord<>(topic, null, null, null, body, headers)).get();
  }

  private Map<String, Object> consumerConfig() {
    return Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers, ConsumerConfig.GROUP_ID_CONFIG, group,
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
  }

  @Override
  public AutoCloseable consume(IdempotentConsumer consumer, Consumer<Verdict> verdicts) {
    KafkaIdempotentConsumer running = KafkaIdempotentConsumer.builder(consumerConfig(), List.of(topic), consumer)
        .deadLetter(KafkaRecordHandler.DeadLetter.toTopic(producer, deadTopic))
        .onVerdict((m, v) -> verdicts.accept(v))
        .build();
    running.start();
    return running;
  }

  @Override
  public void processThenCrashBeforeAck(IdempotentConsumer consumer) throws Exception {
    Map<String, Object> config = new HashMap<>(consumerConfig());
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "1");
    KafkaRecordHandler handler = new KafkaRecordHandler(consumer, KafkaRecordHandler.KeySource.idHeader(),
        KafkaRecordHandler.DeadLetter.haltPartition());
    try (KafkaConsumer<byte[], byte[]> doomed = new KafkaConsumer<>(config)) {
      doomed.subscribe(List.of(topic));
      ConsumerRecord<byte[], byte[]> record = null;
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (record == null && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : doomed.poll(Duration.ofMillis(200))) {
          record = r;
          break;
        }
      }
      if (record == null) {
        throw new IllegalStateException("no record to process");
      }
      Verdict verdict = handler.handle(record);
      if (verdict.action() != Verdict.Action.ACK) {
        throw new IllegalStateException("expected the first delivery to commit, was " + verdict);
      }
      // closed without committing the offset: the group's next member polls the record again
    }
  }

  /** The group's lag on the topic: records whose offset it has not committed. */
  @Override
  public long outstanding() throws Exception {
    return KafkaBroker.lag(group, topic);
  }

  @Override
  public List<Received> deadLetters(int atLeast, Duration wait) {
    return read(deadTopic, atLeast, wait);
  }

  @Override
  public String reasonHeader() {
    return KafkaRecordHandler.REASON_HEADER;
  }

  @Override
  public void close() {
    try {
      transport.close();
      producer.close(Duration.ofSeconds(5));
    } finally {
      KafkaBroker.deleteTopics(List.of(topic, deadTopic));
    }
  }
}
