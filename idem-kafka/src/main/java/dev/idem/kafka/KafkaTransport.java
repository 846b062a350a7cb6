package dev.idem.kafka;

import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publishes {@link Intent.Kind#KAFKA} intents to Kafka with the idempotent producer ({@code
 * enable.idempotence=true}, {@code acks=all}): the producer's own retries of a batch never write a
 * record twice or out of order within a partition. An intent is delivered when the topic's
 * partition leader acknowledged it with all in-sync replicas; a missing topic, a timeout or a
 * broker error is a failure to retry (the relay retries it, then marks it dead).
 *
 * <p>Each record carries the intent's id in its {@value #ID_HEADER} header, the idempotency key
 * of {@link KafkaRecordHandler}; its record key is the key the caller gave ({@link
 * Intent#kafka(String, String, byte[])}: all records of one aggregate in one partition, in the
 * order the relay produces them) or else the intent's id. The idempotent producer dedupes its own
 * retries only: an intent re-published after a relay died between the broker's acknowledgement and
 * marking it sent is a second record with the same id, which the idempotent consumer replays.
 *
 * <p>Order: a relay hands a batch in the order the intents were recorded, and this transport
 * produces it in that order, so one aggregate's records arrive in order while deliveries succeed.
 * An intent whose delivery failed is retried after the relay's backoff, behind the intents recorded
 * after it; and several relays at once split the outbox between them. Consumers that need strict
 * order even then must carry a sequence number in the record.
 *
 * <p>Thread-safe, as {@link KafkaProducer} is. {@link #close} closes the producer.
 */
public final class KafkaTransport implements IntentTransport, AutoCloseable {

  /** The header that carries the intent's id: the consumer's idempotency key. */
  public static final String ID_HEADER = "message-id";

  private final Producer<byte[], byte[]> producer;
  private final Duration ackTimeout;

  /**
   * @param producerConfig the producer's configuration, at least {@code bootstrap.servers}. The
   *     serializers are set to bytes, {@code enable.idempotence} to {@code true} and {@code acks}
   *     to {@code all}; giving them otherwise is refused. Give {@code max.block.ms} well below
   *     {@code ackTimeout} so that a missing topic fails the batch rather than the wait.
   * @param ackTimeout how long a batch waits for the broker's acknowledgements, from 1 ms
   * @throws IllegalArgumentException if the configuration lacks the servers, turns idempotence
   *     off, sets {@code acks} below {@code all} or other serializers
   * @throws org.apache.kafka.common.KafkaException if the producer cannot be made
   */
  public KafkaTransport(Map<String, ?> producerConfig, Duration ackTimeout) {
    Objects.requireNonNull(producerConfig, "producerConfig");
    this.ackTimeout = Objects.requireNonNull(ackTimeout, "ackTimeout");
    if (ackTimeout.toMillis() < 1) {
      throw new IllegalArgumentException("ackTimeout must be at least 1 ms");
    }
    this.producer = new KafkaProducer<>(idempotent(producerConfig));
  }

  /** A transport that waits up to 30 seconds for acknowledgements. */
  public KafkaTransport(Map<String, ?> producerConfig) {
    this(producerConfig, Duration.ofSeconds(30));
  }

  /**
   * The configuration this transport gives its producer: the caller's, with bytes serializers,
   * {@code enable.idempotence=true} and {@code acks=all}. Public so that a dead-letter producer
   * can be made the same way.
   *
   * @param producerConfig at least {@code bootstrap.servers}
   * @return a new mutable map
   * @throws IllegalArgumentException as for the constructor
   */
  public static Map<String, Object> idempotent(Map<String, ?> producerConfig) {
    Map<String, Object> c = new HashMap<>(producerConfig);
    Object servers = c.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
    if (servers == null || servers.toString().isBlank()) {
      throw new IllegalArgumentException("the producer configuration needs bootstrap.servers");
    }
    Object idempotence = c.get(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG);
    if (idempotence != null && !Boolean.parseBoolean(idempotence.toString().toLowerCase(Locale.ROOT))) {
      throw new IllegalArgumentException("enable.idempotence=false is refused: producer retries would duplicate or reorder records");
    }
    Object acks = c.get(ProducerConfig.ACKS_CONFIG);
    if (acks != null && !(acks.toString().equals("all") || acks.toString().equals("-1"))) {
      throw new IllegalArgumentException("acks=" + acks + " is refused: an intent is sent only once all in-sync replicas have it");
    }
    for (String serializer : List.of(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG)) {
      Object given = c.get(serializer);
      if (given != null && !given.equals(ByteArraySerializer.class) && !given.equals(ByteArraySerializer.class.getName())) {
        throw new IllegalArgumentException(serializer + " must be left unset: records are written as bytes, was " + given);
      }
      c.put(serializer, ByteArraySerializer.class.getName());
    }
    c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    c.put(ProducerConfig.ACKS_CONFIG, "all");
    return c;
  }

  @Override
  public Intent.Kind kind() {
    return Intent.Kind.KAFKA;
  }

  @Override
  public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
    List<Future<RecordMetadata>> acks = new ArrayList<>(batch.size());
    List<String> failedAtSend = new ArrayList<>(batch.size());
    for (OutboxEntry entry : batch) {
      Intent intent = entry.intent();
      RecordHeaders headers = new RecordHeaders();
      headers.add(ID_HEADER, entry.id().getBytes(StandardCharsets.UTF_8));
      for (Map.Entry<String, String> h : intent.headers()) {
        headers.add(h.getKey(), h.getValue().getBytes(StandardCharsets.UTF_8));
      }
      String key = intent.route() == null ? entry.id() : intent.route();
      ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(intent.target(), null, null,
          key.getBytes(StandardCharsets.UTF_8), intent.body(), headers);
      try {
        acks.add(producer.send(record));
        failedAtSend.add(null);
      } catch (RuntimeException e) {
        acks.add(null);
        failedAtSend.add("Kafka send failed: " + e);
      }
    }
    long deadline = System.nanoTime() + ackTimeout.toNanos();
    List<Delivery> out = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      String id = batch.get(i).id();
      if (acks.get(i) == null) {
        out.add(Delivery.retry(id, failedAtSend.get(i)));
        continue;
      }
      try {
        acks.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        out.add(Delivery.delivered(id));
      } catch (ExecutionException e) {
        out.add(Delivery.retry(id, "Kafka publish to '" + batch.get(i).intent().target() + "' failed: " + e.getCause()));
      } catch (TimeoutException e) {
        out.add(Delivery.retry(id, "no Kafka acknowledgement within " + ackTimeout.toMillis() + " ms"));
      }
    }
    return out;
  }

  /** Closes the producer, waiting up to 5 seconds for records in flight. */
  @Override
  public void close() {
    producer.close(Duration.ofSeconds(5));
  }
}
