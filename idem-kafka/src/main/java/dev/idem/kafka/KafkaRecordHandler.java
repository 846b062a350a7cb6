package dev.idem.kafka;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;
import org.jspecify.annotations.Nullable;

/**
 * Handles one Kafka record through an {@link IdempotentConsumer} and says what the poller must do
 * with its offset: the building block of {@link KafkaIdempotentConsumer}'s poll loop, and of any
 * other container that polls (Spring Kafka's listener containers, in the starter).
 *
 * <p>{@link #handle} returns the {@link Verdict} after acting on it:
 *
 * <ul>
 *   <li>{@link Verdict.Action#ACK}: the effect and the key committed now (or had committed on an
 *       earlier delivery: replayed, the handler did not run). Commit the offset {@code
 *       record.offset() + 1}.
 *   <li>{@link Verdict.Action#RETRY}: nothing committed. Do not commit; seek the partition back to
 *       {@code record.offset()} and poll it again (after a backoff), so that the records behind it
 *       in its partition wait: Kafka has no per-record redelivery.
 *   <li>{@link Verdict.Action#DEAD_LETTER}: the record will not be handled (no usable key, the id
 *       reused with another value, or the last allowed delivery failed) and its copy was produced
 *       to the dead-letter topic and acknowledged by the broker: commit the offset {@code
 *       record.offset() + 1}. When the copy could not be produced (or the policy is {@link
 *       DeadLetter#haltPartition()}), the verdict is {@code RETRY} instead: a record is never
 *       dropped.
 * </ul>
 *
 * <p>The idempotency key is the record's id as {@link KeySource} reads it (by default the {@value
 * KafkaTransport#ID_HEADER} header that {@link KafkaTransport} sets to the intent's id), or the
 * {@code Idempotency-Key} header when the record has one ({@link IdempotentConsumer}'s rule). The
 * body whose SHA-256 is the fingerprint is the record's value ({@code null} counts as empty).
 *
 * <p>Delivery counts: Kafka does not count deliveries, so they are counted here per (topic,
 * partition, offset) while the record is retried (at most 10,000 records remembered). After a
 * rebalance that moves the partition to another member, or a restart, the count starts again,
 * so a record that always fails may get more deliveries than the bound before it is
 * dead-lettered; call {@link #forget(Collection)} for revoked partitions.
 *
 * <p>Thread-safe: {@link #handle} may run on several threads at once (one per partition or
 * consumer), as the dead-letter producer is; the verdict listener must be too.
 */
public final class KafkaRecordHandler {

  /** The header of a dead-lettered copy that gives the reason. */
  public static final String REASON_HEADER = "x-idem-dead-reason";

  private static final int REMEMBERED = 10_000;

  private final IdempotentConsumer consumer;
  private final KeySource keySource;
  private final DeadLetter deadLetter;
  private final Map<String, Integer> deliveries = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
      return size() > REMEMBERED;
    }
  };
  private volatile BiConsumer<InboundMessage, Verdict> listener = (m, v) -> { };

  /**
   * @param consumer the idempotent consumer (transactional or lease mode)
   * @param keySource where a record's id is
   * @param deadLetter what happens to a record that will not be handled
   * @throws NullPointerException if an argument is {@code null}
   */
  public KafkaRecordHandler(IdempotentConsumer consumer, KeySource keySource, DeadLetter deadLetter) {
    this.consumer = Objects.requireNonNull(consumer, "consumer");
    this.keySource = Objects.requireNonNull(keySource, "keySource");
    this.deadLetter = Objects.requireNonNull(deadLetter, "deadLetter");
  }

  /** @return the idempotent consumer records are handled by */
  public IdempotentConsumer consumer() {
    return consumer;
  }

  /**
   * @param listener told of each record and its verdict after it was acted on (dead letter
   *     produced), on the handling thread; for metrics and logs. It must not throw.
   * @return this handler
   */
  public KafkaRecordHandler onVerdict(BiConsumer<InboundMessage, Verdict> listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    return this;
  }

  /**
   * Where a record's id, its idempotency key, is read from. Immutable.
   */
  public static final class KeySource {
    private final @Nullable String header;

    private KeySource(@Nullable String header) {
      this.header = header;
    }

    /**
     * @return the {@value KafkaTransport#ID_HEADER} header, which {@link KafkaTransport} sets to
     *     the intent's id: the default
     */
    public static KeySource idHeader() {
      return new KeySource(KafkaTransport.ID_HEADER);
    }

    /**
     * @param name a header name, compared exactly (Kafka header names are case-sensitive); its
     *     last value, read as UTF-8, is the id
     * @return a record's id is this header
     * @throws IllegalArgumentException if the name is empty
     */
    public static KeySource header(String name) {
      Objects.requireNonNull(name, "name");
      if (name.isEmpty()) {
        throw new IllegalArgumentException("header name must not be empty");
      }
      return new KeySource(name);
    }

    /**
     * The record key, read as UTF-8, is the id. Only for topics whose producers give every
     * message a key of its own: records that share a key (an entity's id, as for ordering) would
     * be taken for redeliveries of one message, and all but the first replayed (same value) or
     * dead-lettered (another value).
     *
     * @return a record's id is its key
     */
    public static KeySource recordKey() {
      return new KeySource(null);
    }

    /**
     * @param record a record
     * @return its id, or {@code null} when it has none
     */
    public @Nullable String idOf(ConsumerRecord<?, ?> record) {
      if (header == null) {
        return text(record.key());
      }
      Header h = record.headers().lastHeader(header);
      return h == null ? null : text(h.value());
    }

    @Override
    public String toString() {
      return header == null ? "record key" : "header '" + header + "'";
    }
  }

  /** What happens to a record that will not be handled. Immutable. */
  public static final class DeadLetter {
    private final @Nullable Producer<byte[], byte[]> producer;
    private final @Nullable String topic;
    private final Duration timeout;

    private DeadLetter(@Nullable Producer<byte[], byte[]> producer, @Nullable String topic, Duration timeout) {
      this.producer = producer;
      this.topic = topic;
      this.timeout = timeout;
    }

    /**
     * A copy of the record (key, value, headers) is produced to {@code topic} with the reason in
     * the {@value #REASON_HEADER} header (and {@code x-idem-consumer}, {@code x-idem-topic}, {@code
     * x-idem-partition}, {@code x-idem-offset}, {@code x-idem-deliveries}), and its offset is
     * committed only once the broker acknowledged the copy. A crash between the two dead-letters
     * the record twice, with the same id.
     *
     * @param producer the application's producer (thread-safe, as Kafka's is; not closed here);
     *     give it {@code acks=all}
     * @param topic the dead-letter topic; it must exist unless the broker creates topics
     * @param timeout how long to wait for the broker's acknowledgement, from 1 ms; past it the
     *     record is retried instead
     * @return the policy
     * @throws IllegalArgumentException if the timeout is below 1 ms
     */
    public static DeadLetter toTopic(Producer<byte[], byte[]> producer, String topic, Duration timeout) {
      Objects.requireNonNull(producer, "producer");
      Objects.requireNonNull(topic, "topic");
      if (timeout.toMillis() < 1) {
        throw new IllegalArgumentException("timeout must be at least 1 ms");
      }
      return new DeadLetter(producer, topic, timeout);
    }

    /** @return {@link #toTopic(Producer, String, Duration)} with a 10-second timeout */
    public static DeadLetter toTopic(Producer<byte[], byte[]> producer, String topic) {
      return toTopic(producer, topic, Duration.ofSeconds(10));
    }

    /**
     * No dead-letter topic: a record that will not be handled stays where it is, its offset
     * uncommitted, and is retried for ever (each retry told to the verdict listener with the
     * reason): its partition stops there until an operator fixes the cause or moves the offset.
     * For topics where skipping a record is worse than stopping.
     *
     * @return the policy
     */
    public static DeadLetter haltPartition() {
      return new DeadLetter(null, null, Duration.ZERO);
    }

    /** @return the dead-letter topic, or {@code null} for {@link #haltPartition()} */
    public @Nullable String topic() {
      return topic;
    }
  }

  /**
   * Handles one record and acts on the verdict (see the class description). Never throws for a
   * failure of the handler, the store or the dead-letter producer, nor for a key or value of a type
   * it cannot read.
   *
   * <p>Keys and values are read as Spring Kafka and the Kafka client's own deserializers make them:
   * {@code byte[]}, {@link String} (UTF-8), {@link ByteBuffer} (its remaining bytes), Kafka's
   * {@link Bytes}, or {@code null} (empty). A record whose key or value is of any other type (another
   * deserializer's object) is not run: it is dead-lettered with the reason (its copy without that key
   * or value; the {@code x-idem-topic}, {@code x-idem-partition} and {@code x-idem-offset} headers say
   * where the original is), or with {@link DeadLetter#haltPartition()} retried for ever.
   *
   * <p>A {@link Verdict#storeUnavailable()} verdict (Idem's store failed) is not counted as a
   * delivery: retry it after its {@link Verdict#retryAfter()}.
   *
   * @param record the record as polled, never {@code null}
   * @return {@code ACK} or {@code DEAD_LETTER}: commit past it; {@code RETRY}: seek back to it (after
   *     {@link Verdict#pause(Duration)})
   * @throws NullPointerException if {@code record} is {@code null}
   */
  public Verdict handle(ConsumerRecord<?, ?> record) {
    Objects.requireNonNull(record, "record");
    String position = position(record.topic(), record.partition(), record.offset());
    int deliveryCount;
    synchronized (deliveries) {
      deliveryCount = deliveries.merge(position, 1, Integer::sum);
    }
    Map<String, String> headers = new HashMap<>();
    for (Header h : record.headers()) {
      String value = text(h.value());
      if (value != null) {
        headers.put(h.key(), value);
      }
    }
    String source = "topic '" + record.topic() + "' partition " + record.partition() + " offset " + record.offset();
    byte[] recordKey;
    byte[] recordValue;
    InboundMessage message;
    Verdict verdict;
    try {
      recordKey = raw(record.key(), "key");
      recordValue = raw(record.value(), "value");
      String id = keySource.idOf(record);
      byte[] value = recordValue == null ? new byte[0] : recordValue;
      message = new InboundMessage(id, headers, value, deliveryCount, source);
      verdict = consumer.process(message);
    } catch (UnreadableRecord e) {
      recordKey = e.key ? null : bytesOrNull(record.key());
      recordValue = e.key ? bytesOrNull(record.value()) : null;
      message = new InboundMessage(null, headers, new byte[0], deliveryCount, source);
      verdict = new Verdict(Verdict.Action.DEAD_LETTER, null, e.getMessage());
    }
    if (verdict.action() == Verdict.Action.DEAD_LETTER) {
      String failure = deadLetter(record, recordKey, recordValue, verdict.reason(), deliveryCount);
      if (failure != null) {
        verdict = new Verdict(Verdict.Action.RETRY, null, failure + "; kept: " + verdict.reason());
      }
    }
    synchronized (deliveries) {
      if (verdict.action() != Verdict.Action.RETRY) {
        deliveries.remove(position);
      } else if (verdict.storeUnavailable()) {
        deliveries.computeIfPresent(position, (k, n) -> n <= 1 ? null : n - 1); // not counted
      }
    }
    listener.accept(message, verdict);
    return verdict;
  }

  /**
   * Forgets the delivery counts of records of these partitions: call it when they are revoked.
   *
   * @param partitions the revoked partitions
   */
  public void forget(Collection<TopicPartition> partitions) {
    synchronized (deliveries) {
      for (TopicPartition tp : partitions) {
        String prefix = tp.topic() + "\u0000" + tp.partition() + "\u0000";
        deliveries.keySet().removeIf(k -> k.startsWith(prefix));
      }
    }
  }

  /** @return {@code null} when the copy is in the dead-letter topic, else why not */
  private @Nullable String deadLetter(ConsumerRecord<?, ?> record, byte @Nullable [] key, byte @Nullable [] value,
      @Nullable String reason, int deliveryCount) {
    if (deadLetter.producer == null) {
      return "no dead-letter topic: the partition halts at this record";
    }
    RecordHeaders headers = new RecordHeaders();
    for (Header h : record.headers()) {
      if (!h.key().equals(REASON_HEADER)) {
        headers.add(h);
      }
    }
    String why = reason == null ? "" : reason;
    headers.add(REASON_HEADER, bytes(why.length() > 4000 ? why.substring(0, 3997) + "..." : why));
    headers.add("x-idem-consumer", bytes(consumer.name()));
    headers.add("x-idem-topic", bytes(record.topic()));
    headers.add("x-idem-partition", bytes(Integer.toString(record.partition())));
    headers.add("x-idem-offset", bytes(Long.toString(record.offset())));
    headers.add("x-idem-deliveries", bytes(Integer.toString(deliveryCount)));
    ProducerRecord<byte[], byte[]> copy =
        new ProducerRecord<>(deadLetter.topic, null, null, key, value, headers);
    try {
      deadLetter.producer.send(copy).get(deadLetter.timeout.toMillis(), TimeUnit.MILLISECONDS);
      return null;
    } catch (ExecutionException e) {
      return "could not produce the dead letter to '" + deadLetter.topic + "': " + e.getCause();
    } catch (TimeoutException e) {
      return "no acknowledgement of the dead letter from '" + deadLetter.topic + "' within "
          + deadLetter.timeout.toMillis() + " ms";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted while producing the dead letter";
    } catch (RuntimeException e) {
      return "could not produce the dead letter to '" + deadLetter.topic + "': " + e;
    }
  }

  private static byte @Nullable [] raw(@Nullable Object o, String what) {
    byte[] bytes = bytesOrNull(o);
    if (o != null && bytes == null) {
      throw new UnreadableRecord("key".equals(what), "the record's " + what + " is a " + o.getClass().getName()
          + ": an idempotent consumer reads records as byte[], String, ByteBuffer or Bytes (give the container the"
          + " byte-array, string, byte-buffer or bytes deserializer); not run, the original is at its topic, partition"
          + " and offset");
    }
    return bytes;
  }

  /** @return the bytes of a {@code byte[]}, {@code String}, {@code ByteBuffer} or {@code Bytes}, else {@code null} */
  private static byte @Nullable [] bytesOrNull(@Nullable Object o) {
    if (o instanceof byte[] b) {
      return b;
    }
    if (o instanceof String s) {
      return s.getBytes(StandardCharsets.UTF_8);
    }
    if (o instanceof ByteBuffer buffer) {
      ByteBuffer copy = buffer.duplicate();
      byte[] b = new byte[copy.remaining()];
      copy.get(b);
      return b;
    }
    if (o instanceof Bytes b) {
      return b.get();
    }
    return null;
  }

  /** A key or value of a type the handler cannot read. */
  private static final class UnreadableRecord extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final boolean key;

    UnreadableRecord(boolean key, String message) {
      super(message, null, false, false);
      this.key = key;
    }
  }

  private static String position(String topic, int partition, long offset) {
    return topic + "\u0000" + partition + "\u0000" + offset;
  }

  private static @Nullable String text(@Nullable Object value) {
    if (value == null) {
      return null;
    }
    byte[] b = bytesOrNull(value);
    return b == null ? value.toString() : new String(b, StandardCharsets.UTF_8);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
