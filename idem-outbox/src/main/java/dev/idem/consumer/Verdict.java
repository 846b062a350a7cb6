package dev.idem.consumer;

import dev.idem.core.Outcome;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a broker adapter must do with a message after {@link IdempotentConsumer#process}.
 *
 * <p>A {@link Action#RETRY} with a {@link #retryAfter()} says that Idem's own store failed (the key
 * table or lease store could not be used, or its transaction did not commit for the store's
 * reasons): the message is not at fault, so the delivery must not count towards {@link
 * IdempotentConsumer#maxDeliveries()} and the adapter redelivers it after at least that pause (the
 * Kafka partition paused, the RabbitMQ requeue delayed, the JetStream {@code nak} delayed). Such a
 * message is never dead-lettered, however long the store is down.
 *
 * <p>Immutable and thread-safe.
 *
 * @param action acknowledge, redeliver or dead-letter
 * @param outcome the Idem outcome when the handler ran or was replayed, else {@code null}
 * @param reason why it is redelivered or dead-lettered, {@code null} for {@link Action#ACK}
 * @param retryAfter for a {@link Action#RETRY} because Idem's store failed: the pause before the
 *     redelivery, a delivery that does not count; {@code null} otherwise (the delivery counts)
 */
public record Verdict(Action action, @Nullable Outcome outcome, @Nullable String reason, @Nullable Duration retryAfter) {

  /** The three things a consumer does with a message. */
  public enum Action {
    /** Handled now or before (its effect and key committed): acknowledge it. */
    ACK,
    /** Failed, nothing committed, the key released: have the broker deliver it again. */
    RETRY,
    /** Will not succeed, or failed on its last allowed delivery: move it to the dead letters, with the reason. */
    DEAD_LETTER
  }

  /**
   * Validates the components.
   *
   * @throws NullPointerException if {@code action} is {@code null}, or {@code reason} is {@code
   *     null} for a verdict other than {@link Action#ACK}
   * @throws IllegalArgumentException if {@code retryAfter} is given for a verdict other than {@link
   *     Action#RETRY}, or is negative
   */
  public Verdict {
    Objects.requireNonNull(action, "action");
    if (action != Action.ACK) {
      Objects.requireNonNull(reason, "reason");
    }
    if (retryAfter != null && (action != Action.RETRY || retryAfter.isNegative())) {
      throw new IllegalArgumentException("retryAfter is for a RETRY, from 0; was " + retryAfter + " for " + action);
    }
  }

  /**
   * A verdict whose delivery counts as any other ({@link #retryAfter()} {@code null}).
   *
   * @param action acknowledge, redeliver or dead-letter, never {@code null}
   * @param outcome the Idem outcome, or {@code null}
   * @param reason why it is redelivered or dead-lettered; {@code null} only for {@link Action#ACK}
   */
  public Verdict(Action action, @Nullable Outcome outcome, @Nullable String reason) {
    this(action, outcome, reason, null);
  }

  /**
   * Idem's store failed: redeliver after {@code retryAfter}, without counting the delivery.
   *
   * @param retryAfter the pause before the redelivery, from 0, never {@code null}
   * @param reason what failed, never {@code null}
   * @return a {@link Action#RETRY} with that pause
   * @throws NullPointerException if an argument is {@code null}
   */
  public static Verdict storeUnavailable(Duration retryAfter, String reason) {
    return new Verdict(Action.RETRY, null, reason, Objects.requireNonNull(retryAfter, "retryAfter"));
  }

  /**
   * @return whether this is a retry because Idem's store failed ({@link #retryAfter()} is given): the
   *     delivery does not count towards {@link IdempotentConsumer#maxDeliveries()}
   */
  public boolean storeUnavailable() {
    return retryAfter != null;
  }

  /**
   * @param atLeast the adapter's own redelivery pause, never {@code null}
   * @return the pause before a redelivery: the longer of {@code atLeast} and {@link #retryAfter()}
   */
  public Duration pause(Duration atLeast) {
    return retryAfter != null && retryAfter.compareTo(atLeast) > 0 ? retryAfter : atLeast;
  }
}
