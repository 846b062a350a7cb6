package dev.idem.spring.kafka;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.spring.internal.ListenerLog;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.util.backoff.FixedBackOff;

/**
 * One idempotent consumer for Spring Kafka {@code @KafkaListener} methods: the method hands each
 * {@link ConsumerRecord} (or each poll's list of them) to {@code process}, which runs the {@link
 * IdempotentConsumer} through a {@link KafkaRecordHandler} (key = the record's {@code message-id}
 * header, which the outbox relay sets to the intent's id, or the source given; scope = the
 * consumer's name; fingerprint = the value) and lets the container commit the offset only after
 * the handler's transaction committed. A redelivery of a handled record (a member that died before
 * its offset commit, a partition moved mid-batch by a rebalance) runs nothing; a failing handler is
 * retried up to {@link IdempotentConsumer#maxDeliveries}, then dead-lettered with the reason.
 *
 * <p>Manual acknowledgement (container {@code AckMode.MANUAL} or {@code MANUAL_IMMEDIATE}; the
 * method takes an {@link Acknowledgment}):
 *
 * <pre>{@code
 * @KafkaListener(topics = "orders", groupId = "billing")
 * void onOrder(ConsumerRecord<String, String> record, Acknowledgment ack) {
 *   billingListener.process(record, ack);
 * }
 * }</pre>
 *
 * handled or dead-lettered: {@link Acknowledgment#acknowledge()}; to retry: {@link
 * Acknowledgment#nack(Duration)} (the container seeks back to the record and polls it again after
 * the backoff). Batch listeners call {@link #processBatch(List, Acknowledgment)}: the records before
 * the first one to retry are committed, that one and the rest are polled again ({@link
 * Acknowledgment#nack(int, Duration)}).
 *
 * <p>Automatic acknowledgement ({@code AckMode.RECORD} or {@code BATCH}, no {@link Acknowledgment}):
 * {@link #process(ConsumerRecord)} and {@link #processBatch(List)} return normally when the
 * container may commit and throw when it must not ({@link RetryException}, or a {@link
 * BatchListenerFailedException} at the record to retry whose cause is one). The container's error
 * handler then seeks back; it must never give up and skip the record. In a Spring Boot application
 * the starter sees to that before the containers start: each container's error handler is wrapped
 * so that Idem's retries go to a handler that retries for ever (Idem dead-letters by itself after
 * the last allowed delivery) and everything else to the container's own; a container whose handler
 * cannot be wrapped stops the start-up. Without the starter, give such a container {@link
 * #retryingErrorHandler(Duration)}.
 *
 * <p>No acknowledgement mode can drop a record. The manual-acknowledgement methods never throw
 * into the container (so Spring's default error handler, which gives up after its back-off, never
 * sees a record of theirs): a record is acknowledged only once handled, replayed or dead-lettered,
 * and anything else, an unexpected failure included, is a nack. The automatic-acknowledgement
 * methods throw only to retry, and need an error handler that never gives up on those throws
 * (the starter's wrapping, or {@link #retryingErrorHandler(Duration)}).
 *
 * <p>When Idem's store fails ({@link Verdict#storeUnavailable()}) the record is retried after the
 * verdict's {@link Verdict#retryAfter()} (100 ms doubling to 30 s while the store stays down) if
 * that is longer than the backoff, never dead-lettered: the nack's sleep with manual
 * acknowledgement, a sleep on the consumer thread before the error handler's own back-off with
 * automatic acknowledgement. After a nack Spring Kafka polls again only after the nack's sleep and
 * up to the container's poll timeout (see docs/kafka.md).
 *
 * <p>Records are read as {@code byte[]}, {@code String}, {@code ByteBuffer} or Kafka's {@code
 * Bytes} (the byte-array, string, byte-buffer or bytes deserializer); a record of another type is
 * dead-lettered with the reason, never thrown into the container. When made it logs one INFO line
 * ({@code Idem: listener '<name>' (<mode>, Kafka) keys from ..., dead letters to ...}), and it logs
 * dead letters and store failures at WARN, at most once a minute each (logger {@code
 * dev.idem.spring.listeners}).
 *
 * <p>Make one instance per logical consumer (a bean) and keep it: delivery counts live in it. Thread-safe:
 * one instance may serve every thread of a concurrent container.
 */
public final class IdemKafkaListener {

  private static final Duration DEFAULT_BACKOFF = Duration.ofMillis(100);

  private final KafkaRecordHandler handler;
  private final Duration backoff;
  private final ListenerLog log;

  private IdemKafkaListener(KafkaRecordHandler handler, Duration backoff, ListenerLog log) {
    this.handler = handler;
    this.backoff = backoff;
    this.log = log;
  }

  /**
   * @param consumer the idempotent consumer, in transactional or lease mode
   * @param keySource where a record's id is
   * @param deadLetter what happens to a record that will not be handled
   * @return the listener; its retries wait 100 ms
   * @throws NullPointerException if an argument is {@code null}
   */
  public static IdemKafkaListener of(IdempotentConsumer consumer, KafkaRecordHandler.KeySource keySource,
      KafkaRecordHandler.DeadLetter deadLetter) {
    IdemKafkaListener listener =
        new IdemKafkaListener(new KafkaRecordHandler(consumer, keySource, deadLetter), DEFAULT_BACKOFF, new ListenerLog(consumer.name()));
    listener.log.started(consumer.leaseMode() ? "lease" : "transactional", "Kafka",
        keySource + " (or the " + IdempotentConsumer.KEY_HEADER + " header when a record has one)",
        deadLetter.topic() == null ? "nowhere: the partition halts at a record that will not be handled"
            : "topic '" + deadLetter.topic() + "'");
    return listener;
  }

  /**
   * @param backoff how long a retried record waits before it is polled again (manual
   *     acknowledgement), 0 to 1 minute
   * @return a copy with that backoff (sharing the delivery counts)
   */
  public IdemKafkaListener withBackoff(Duration backoff) {
    Objects.requireNonNull(backoff, "backoff");
    if (backoff.isNegative() || backoff.compareTo(Duration.ofMinutes(1)) > 0) {
      throw new IllegalArgumentException("backoff must be between 0 and 1 minute");
    }
    return new IdemKafkaListener(handler, backoff, log);
  }

  /** @return the idempotent consumer it runs */
  public IdempotentConsumer consumer() {
    return handler.consumer();
  }

  /** @return the record handler (for {@link KafkaRecordHandler#onVerdict} listeners) */
  public KafkaRecordHandler handler() {
    return handler;
  }

  /**
   * An error handler for containers with automatic acknowledgement: it seeks back to the failed
   * record and retries after {@code backoff}, for ever; it never skips a record, since Idem
   * dead-letters by itself.
   *
   * @param backoff the wait between retries, from 0
   * @return a new error handler
   */
  public static CommonErrorHandler retryingErrorHandler(Duration backoff) {
    DefaultErrorHandler h = new DefaultErrorHandler(new FixedBackOff(backoff.toMillis(), FixedBackOff.UNLIMITED_ATTEMPTS));
    h.setLogLevel(org.springframework.kafka.KafkaException.Level.DEBUG);
    return h;
  }

  /** Thrown to the container when a record must be polled again; its offset is not committed. */
  public static final class RetryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RetryException(String reason) {
      super(reason);
    }
  }

  /**
   * Manual acknowledgement: handles the record and acknowledges it (handled, replayed or
   * dead-lettered) or nacks it (retry).
   *
   * @param record the record, never {@code null}
   * @param ack the record's acknowledgment, never {@code null}
   * @return the verdict; never throws for a failure of the handler, the store, the record's type or
   *     anything unexpected (those are nacked: retried, not skipped)
   * @throws NullPointerException if an argument is {@code null}
   */
  public Verdict process(ConsumerRecord<?, ?> record, Acknowledgment ack) {
    Objects.requireNonNull(record, "record");
    Objects.requireNonNull(ack, "ack");
    Verdict verdict = handle(record);
    if (verdict.action() == Verdict.Action.RETRY) {
      ack.nack(verdict.pause(backoff));
    } else {
      ack.acknowledge();
    }
    return verdict;
  }

  /**
   * Automatic acknowledgement: handles the record; returns when the container may commit it.
   *
   * @param record the record, never {@code null}
   * @return the verdict, {@code ACK} or {@code DEAD_LETTER}
   * @throws RetryException when the record must be polled again (nothing committed)
   */
  public Verdict process(ConsumerRecord<?, ?> record) {
    Objects.requireNonNull(record, "record");
    Verdict verdict = handle(record);
    if (verdict.action() == Verdict.Action.RETRY) {
      pauseForStore(verdict);
      throw new RetryException(verdict.reason());
    }
    return verdict;
  }

  /**
   * The record through the handler, never throwing: anything unexpected (a bug, a listener that
   * threw) becomes a {@code RETRY}, so that no error handler can skip the record for it.
   */
  private Verdict handle(ConsumerRecord<?, ?> record) {
    Verdict verdict;
    try {
      verdict = handler.handle(record);
    } catch (RuntimeException e) {
      log.unexpected(where(record), e);
      return new Verdict(Verdict.Action.RETRY, null, "unexpected failure in Idem's listener support, retried: " + e);
    }
    log.verdict(where(record), verdict);
    return verdict;
  }

  /** Automatic acknowledgement: the container's error handler backs off its own fixed pause; a store failure waits longer. */
  private void pauseForStore(Verdict verdict) {
    if (verdict.storeUnavailable() && verdict.retryAfter().toMillis() > 0) {
      try {
        Thread.sleep(verdict.retryAfter().toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static String where(ConsumerRecord<?, ?> record) {
    return "topic '" + record.topic() + "' partition " + record.partition() + " offset " + record.offset();
  }

  /**
   * Manual acknowledgement of a batch listener: handles the records in order, each in a
   * transaction of its own; acknowledges the batch when all are handled, else commits the ones
   * before the first to retry and has it and the rest polled again.
   *
   * @param records the poll's records, in the order polled
   * @param ack the batch's acknowledgment
   * @return the verdicts of the records handled, in order (the last one {@code RETRY} when the
   *     batch stopped there)
   */
  public List<Verdict> processBatch(List<? extends ConsumerRecord<?, ?>> records, Acknowledgment ack) {
    Objects.requireNonNull(ack, "ack");
    List<Verdict> verdicts = new java.util.ArrayList<>(records.size());
    for (int i = 0; i < records.size(); i++) {
      Verdict v = handle(records.get(i));
      verdicts.add(v);
      if (v.action() == Verdict.Action.RETRY) {
        ack.nack(i, v.pause(backoff));
        return verdicts;
      }
    }
    ack.acknowledge();
    return verdicts;
  }

  /**
   * Automatic acknowledgement of a batch listener: handles the records in order, each in a
   * transaction of its own; returns when the container may commit the whole batch.
   *
   * @param records the poll's records, in the order polled
   * @return the verdicts, in order
   * @throws BatchListenerFailedException at the first record to retry: the container commits the
   *     records before it and polls it and the rest again
   */
  public List<Verdict> processBatch(List<? extends ConsumerRecord<?, ?>> records) {
    List<Verdict> verdicts = new java.util.ArrayList<>(records.size());
    for (int i = 0; i < records.size(); i++) {
      Verdict v = handle(records.get(i));
      if (v.action() == Verdict.Action.RETRY) {
        pauseForStore(v);
        throw new BatchListenerFailedException(v.reason(), new RetryException(v.reason()), i);
      }
      verdicts.add(v);
    }
    return verdicts;
  }
}
