package dev.idem.spring;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.kafka.KafkaRecordHandler;
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
 * container may commit and throw when it must not ({@link RetryException}, {@link
 * BatchListenerFailedException} at the record to retry). The container's error handler then seeks
 * back; it must never give up and skip the record: give the container {@link
 * #retryingErrorHandler(Duration)} (Idem dead-letters by itself after the last allowed delivery).
 *
 * <p>Records are read as {@code byte[]} or {@code String} (the byte-array or string deserializer).
 * Make one instance per logical consumer (a bean) and keep it: delivery counts live in it. Thread-safe:
 * one instance may serve every thread of a concurrent container.
 */
public final class IdemKafkaListener {

  private static final Duration DEFAULT_BACKOFF = Duration.ofMillis(100);

  private final KafkaRecordHandler handler;
  private final Duration backoff;

  private IdemKafkaListener(KafkaRecordHandler handler, Duration backoff) {
    this.handler = handler;
    this.backoff = backoff;
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
    return new IdemKafkaListener(new KafkaRecordHandler(consumer, keySource, deadLetter), DEFAULT_BACKOFF);
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
    return new IdemKafkaListener(handler, backoff);
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
   * @return the verdict
   */
  public Verdict process(ConsumerRecord<?, ?> record, Acknowledgment ack) {
    Objects.requireNonNull(ack, "ack");
    Verdict verdict = handler.handle(record);
    if (verdict.action() == Verdict.Action.RETRY) {
      ack.nack(backoff);
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
    Verdict verdict = handler.handle(record);
    if (verdict.action() == Verdict.Action.RETRY) {
      throw new RetryException(verdict.reason());
    }
    return verdict;
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
      Verdict v = handler.handle(records.get(i));
      verdicts.add(v);
      if (v.action() == Verdict.Action.RETRY) {
        ack.nack(i, backoff);
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
      Verdict v = handler.handle(records.get(i));
      if (v.action() == Verdict.Action.RETRY) {
        throw new BatchListenerFailedException(v.reason(), i);
      }
      verdicts.add(v);
    }
    return verdicts;
  }
}
