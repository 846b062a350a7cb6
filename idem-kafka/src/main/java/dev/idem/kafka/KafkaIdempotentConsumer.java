package dev.idem.kafka;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.jspecify.annotations.Nullable;

/**
 * Runs an {@link IdempotentConsumer} on Kafka topics with the plain Kafka client: one or more
 * members of a consumer group, each a {@link KafkaConsumer} on a thread of its own, handle records
 * through a {@link KafkaRecordHandler} and commit a record's offset only after its effect and its
 * idempotency key committed in one database transaction.
 *
 * <pre>{@code
 * KafkaIdempotentConsumer orders = KafkaIdempotentConsumer.builder(
 *         Map.of("bootstrap.servers", "kafka:9092", "group.id", "billing"), List.of("orders"), consumer)
 *     .deadLetter(KafkaRecordHandler.DeadLetter.toTopic(producer, "orders.DLT"))
 *     .concurrency(3)
 *     .build();
 * orders.start();
 * ...
 * orders.close();
 * }</pre>
 *
 * <p>The everyday duplicate on Kafka is a redelivery: a member committed its database work and died
 * (or lost its partition in a rebalance) before its offset commit, and the partition's next owner
 * polls the record again. Here that redelivery replays: the handler does not run again, the offset
 * is committed.
 *
 * <p>Commits ({@link Commit}): {@link Commit#RECORD} commits each record's offset synchronously as
 * soon as it is handled (at most one record per partition is redelivered after a crash); {@link
 * Commit#POLL} commits the offsets of a poll's records once they are all handled (fewer commits,
 * more redeliveries after a crash, all of them replays). A commit that fails because the group
 * rebalanced is not an error: the new owner redelivers, and replays. Nor is one that times out
 * (the broker did not answer within the client's {@code default.api.timeout.ms}, 60 s unless set,
 * as while it restarts): the member goes on polling, and a later commit of the partition covers
 * the record, or its next owner replays it. Both are told to {@link #onError}.
 *
 * <p>A {@link Verdict.Action#RETRY} seeks the record's partition back to it and pauses that
 * partition for the {@link Builder#retryBackoff} (other partitions go on), so the partition's
 * records keep their order. When Idem's store failed ({@link Verdict#storeUnavailable()}) the pause
 * is the verdict's {@link Verdict#retryAfter()} if longer (100 ms doubling to 30 s while the store
 * stays down), and the delivery does not count towards the dead-letter bound. Each member's thread is its {@link KafkaConsumer}'s only user.
 *
 * <p>Thread-safe: {@link #start} and {@link #close} may be called from any thread.
 */
public final class KafkaIdempotentConsumer implements AutoCloseable {

  /** When offsets are committed. */
  public enum Commit {
    /** After each record: {@code commitSync} of that record's offset. */
    RECORD,
    /** After each poll's records are all handled: one {@code commitSync} of their offsets. */
    POLL
  }

  private static final AtomicInteger THREADS = new AtomicInteger();

  private final Map<String, Object> config;
  private final List<String> topics;
  private final KafkaRecordHandler handler;
  private final int concurrency;
  private final Commit commit;
  private final Duration retryBackoff;
  private final Duration pollTimeout;
  private final List<Member> members = new CopyOnWriteArrayList<>();
  private volatile BiConsumer<String, Exception> errors = (what, e) -> { };
  private boolean started;

  private KafkaIdempotentConsumer(Builder b) {
    this.config = Map.copyOf(b.config);
    this.topics = List.copyOf(b.topics);
    this.handler = new KafkaRecordHandler(b.consumer, b.keySource, b.deadLetter);
    if (b.listener != null) {
      handler.onVerdict(b.listener);
    }
    this.concurrency = b.concurrency;
    this.commit = b.commit;
    this.retryBackoff = b.retryBackoff;
    this.pollTimeout = b.pollTimeout;
  }

  /**
   * @param consumerConfig the Kafka consumer's configuration: at least {@code bootstrap.servers}
   *     and {@code group.id}. The deserializers are set to bytes and {@code enable.auto.commit} to
   *     {@code false}; giving them otherwise is refused.
   * @param topics the topics to subscribe to, not empty
   * @param consumer the idempotent consumer the records go through
   * @return a builder: one member, {@link Commit#RECORD}, {@link KafkaRecordHandler.KeySource#idHeader()},
   *     {@link KafkaRecordHandler.DeadLetter#haltPartition()} until a dead-letter topic is given,
   *     retries after 100 ms
   * @throws IllegalArgumentException if the configuration lacks the servers or the group, sets
   *     auto-commit on or other deserializers, or the topics are empty
   */
  public static Builder builder(Map<String, ?> consumerConfig, Collection<String> topics, IdempotentConsumer consumer) {
    return new Builder(consumerConfig, topics, consumer);
  }

  /** Builds a {@link KafkaIdempotentConsumer}. Not thread-safe; setters validate eagerly. */
  public static final class Builder {
    private final Map<String, Object> config;
    private final List<String> topics;
    private final IdempotentConsumer consumer;
    private KafkaRecordHandler.KeySource keySource = KafkaRecordHandler.KeySource.idHeader();
    private KafkaRecordHandler.DeadLetter deadLetter = KafkaRecordHandler.DeadLetter.haltPartition();
    private int concurrency = 1;
    private Commit commit = Commit.RECORD;
    private Duration retryBackoff = Duration.ofMillis(100);
    private Duration pollTimeout = Duration.ofMillis(200);
    private @Nullable BiConsumer<InboundMessage, Verdict> listener;

    private Builder(Map<String, ?> consumerConfig, Collection<String> topics, IdempotentConsumer consumer) {
      Objects.requireNonNull(consumerConfig, "consumerConfig");
      this.consumer = Objects.requireNonNull(consumer, "consumer");
      this.topics = List.copyOf(Objects.requireNonNull(topics, "topics"));
      if (this.topics.isEmpty()) {
        throw new IllegalArgumentException("at least one topic to subscribe to");
      }
      Map<String, Object> c = new HashMap<>(consumerConfig);
      for (String required : List.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ConsumerConfig.GROUP_ID_CONFIG)) {
        if (c.get(required) == null || c.get(required).toString().isBlank()) {
          throw new IllegalArgumentException("the consumer configuration needs " + required);
        }
      }
      Object auto = c.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
      if (auto != null && Boolean.parseBoolean(auto.toString().toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException(
            "enable.auto.commit=true would commit offsets before the effect commits; leave it unset (false)");
      }
      for (String deserializer : List.of(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
          ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG)) {
        Object given = c.get(deserializer);
        if (given != null && !given.equals(ByteArrayDeserializer.class) && !given.equals(ByteArrayDeserializer.class.getName())) {
          throw new IllegalArgumentException(deserializer + " must be left unset: records are read as bytes, was " + given);
        }
        c.put(deserializer, ByteArrayDeserializer.class.getName());
      }
      c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
      this.config = c;
    }

    /** @param keySource where a record's id is; default the {@code message-id} header */
    public Builder keySource(KafkaRecordHandler.KeySource keySource) {
      this.keySource = Objects.requireNonNull(keySource, "keySource");
      return this;
    }

    /** @param deadLetter what happens to a record that will not be handled; default {@link KafkaRecordHandler.DeadLetter#haltPartition()} */
    public Builder deadLetter(KafkaRecordHandler.DeadLetter deadLetter) {
      this.deadLetter = Objects.requireNonNull(deadLetter, "deadLetter");
      return this;
    }

    /**
     * @param concurrency members of the group in this process, 1 to 64; each is given some of the
     *     topics' partitions (more members than partitions leaves some idle)
     */
    public Builder concurrency(int concurrency) {
      if (concurrency < 1 || concurrency > 64) {
        throw new IllegalArgumentException("concurrency must be between 1 and 64, was " + concurrency);
      }
      this.concurrency = concurrency;
      return this;
    }

    /** @param commit when offsets are committed; default {@link Commit#RECORD} */
    public Builder commit(Commit commit) {
      this.commit = Objects.requireNonNull(commit, "commit");
      return this;
    }

    /** @param retryBackoff how long a partition pauses after a {@code RETRY}, 0 to 1 hour; default 100 ms */
    public Builder retryBackoff(Duration retryBackoff) {
      Objects.requireNonNull(retryBackoff, "retryBackoff");
      if (retryBackoff.isNegative() || retryBackoff.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("retryBackoff must be between 0 and 1 hour");
      }
      this.retryBackoff = retryBackoff;
      return this;
    }

    /** @param listener told of each record and its verdict after it was acted on, on the member's thread; must not throw */
    public Builder onVerdict(BiConsumer<InboundMessage, Verdict> listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** @return a new consumer, not started */
    public KafkaIdempotentConsumer build() {
      return new KafkaIdempotentConsumer(this);
    }
  }

  /**
   * @param errors told of a failure the members recover from by themselves (a commit refused by a
   *     rebalance, a poll that failed): what failed, and the exception; for logs. Must not throw.
   * @return this consumer
   */
  public KafkaIdempotentConsumer onError(BiConsumer<String, Exception> errors) {
    this.errors = Objects.requireNonNull(errors, "errors");
    return this;
  }

  /**
   * Starts the members: each subscribes and polls on a daemon thread of its own.
   *
   * @throws IllegalStateException if already started or closed
   * @throws KafkaException if a member's client cannot be made (bad configuration)
   */
  public synchronized void start() {
    if (started) {
      throw new IllegalStateException("already started");
    }
    started = true;
    for (int i = 0; i < concurrency; i++) {
      Member m = new Member(new KafkaConsumer<>(config));
      members.add(m);
      Thread t = new Thread(m, "idem-kafka-" + handler.consumer().name() + "-" + THREADS.incrementAndGet());
      t.setDaemon(true);
      m.thread = t;
      t.start();
    }
  }

  /** @return the partitions each running member holds now (a snapshot, for tests and metrics) */
  public List<Collection<TopicPartition>> assignments() {
    List<Collection<TopicPartition>> out = new ArrayList<>();
    for (Member m : members) {
      out.add(List.copyOf(m.assigned));
    }
    return out;
  }

  /**
   * Stops every member: each finishes the record it is handling (and commits it), then leaves the
   * group; waits up to 30 seconds for them.
   */
  @Override
  public void close() {
    for (Member m : members) {
      m.running = false;
      m.client.wakeup();
    }
    for (Member m : members) {
      try {
        if (m.thread != null) {
          m.thread.join(30_000);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
    members.clear();
  }

  /** How long the last commit of a member that is closing may wait; a record it misses replays. */
  static final Duration CLOSING_COMMIT_TIMEOUT = Duration.ofSeconds(5);

  /** One group member: its client and the thread that alone uses it. */
  private final class Member implements Runnable, ConsumerRebalanceListener {
    final KafkaConsumer<byte[], byte[]> client;
    final Map<TopicPartition, Long> pausedUntil = new HashMap<>();
    final Collection<TopicPartition> assigned = new CopyOnWriteArrayList<>();
    volatile boolean running = true;
    @Nullable Thread thread;

    Member(KafkaConsumer<byte[], byte[]> client) {
      this.client = client;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      // every handled record was committed before this poll; nothing is pending here
      assigned.removeAll(partitions);
      handler.forget(partitions);
      partitions.forEach(pausedUntil::remove);
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      assigned.addAll(partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      onPartitionsRevoked(partitions);
    }

    @Override
    public void run() {
      try {
        client.subscribe(topics, this);
        while (running) {
          resumeDue();
          ConsumerRecords<byte[], byte[]> records;
          try {
            records = client.poll(pollTimeout);
          } catch (WakeupException e) {
            break;
          } catch (KafkaException e) {
            errors.accept("poll", e);
            sleep(retryBackoff.isZero() ? Duration.ofMillis(100) : retryBackoff);
            continue;
          }
          Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
          polled:
          for (TopicPartition tp : records.partitions()) {
            for (ConsumerRecord<byte[], byte[]> record : records.records(tp)) {
              if (!running) {
                // closing: the rest of the poll is left uncommitted, for the partition's next owner
                client.seek(tp, record.offset());
                break polled;
              }
              Verdict verdict = handler.handle(record);
              if (verdict.action() == Verdict.Action.RETRY) {
                client.seek(tp, record.offset());
                client.pause(List.of(tp));
                // a store failure backs off longer (its retryAfter, doubling up to 30 s) than a handler's
                pausedUntil.put(tp, System.nanoTime() + verdict.pause(retryBackoff).toNanos());
                break; // the partition's later records wait behind this one
              }
              OffsetAndMetadata next = new OffsetAndMetadata(record.offset() + 1);
              if (commit == Commit.RECORD) {
                commit(Map.of(tp, next));
              } else {
                done.put(tp, next);
              }
            }
          }
          if (!done.isEmpty()) {
            commit(done);
          }
        }
      } catch (WakeupException e) {
        // closing
      } catch (RuntimeException e) {
        errors.accept("member stopped", e);
      } finally {
        try {
          client.close(Duration.ofSeconds(5));
        } catch (RuntimeException e) {
          errors.accept("close", e);
        }
      }
    }

    private void commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
      try {
        client.commitSync(offsets);
      } catch (CommitFailedException | RebalanceInProgressException e) {
        // the partitions moved: their next owner polls these records again, and replays them
        errors.accept("commit after a rebalance", e);
      } catch (TimeoutException e) {
        // the broker did not answer within default.api.timeout.ms (down, restarting): the offsets
        // stay uncommitted and the member goes on; the partition's next commit covers them, or its
        // next owner polls these records again and replays them
        errors.accept("commit timed out", e);
      } catch (WakeupException e) {
        // close() during the commit: commit once more so the handled record is not redelivered,
        // bounded: during a rebalance an unbounded commit waits default.api.timeout.ms (60 s), the
        // member outlives close()'s wait, keeps heartbeating without polling, and holds the whole
        // group's rebalance until max.poll.interval.ms (5 min) ends it
        try {
          client.commitSync(offsets, CLOSING_COMMIT_TIMEOUT);
        } catch (RuntimeException again) {
          errors.accept("commit while closing", again);
        }
        running = false;
      }
    }

    private void resumeDue() {
      if (pausedUntil.isEmpty()) {
        return;
      }
      long now = System.nanoTime();
      List<TopicPartition> due = new ArrayList<>();
      pausedUntil.forEach((tp, until) -> {
        if (now - until >= 0) {
          due.add(tp);
        }
      });
      if (!due.isEmpty()) {
        due.forEach(pausedUntil::remove);
        due.retainAll(client.assignment());
        client.resume(due);
      }
    }

    private void sleep(Duration d) {
      try {
        Thread.sleep(d.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        running = false;
      }
    }
  }
}
