package dev.idem.core;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The outcome is unknown: the effect ran, and whether its result was kept with its stored response
 * is not known. This is the one name Idem gives that case in both modes ({@link
 * AttemptResult.Kind#OUTCOME_UNKNOWN}, the problem type {@code outcome-unknown}); {@link #phase()}
 * says which write was left in doubt:
 *
 * <ul>
 *   <li>{@link Phase#COMPLETION}, lease mode: the effect ran outside the store, so it happened;
 *       every completion of the claim ({@link dev.idem.core.spi.LeaseStore#complete}, retried with
 *       the same owner token within the lease) failed with a store error, so whether the response
 *       is stored is unknown: the last write may have happened and only its acknowledgement been
 *       lost.
 *   <li>{@link Phase#COMMIT}, transactional mode: the effect's writes and the stored response were
 *       sent for commit in one transaction and the commit's acknowledgement was lost, so both were
 *       kept or neither was.
 * </ul>
 *
 * <p>The response the effect returned must not be sent as the answer: a later retry could
 * contradict it. What a retry with the same scope and key gets instead:
 *
 * <ul>
 *   <li>if the response was stored after all: the stored response, replayed;
 *   <li>{@link Phase#COMPLETION}, before the lease ends: {@link RequestInProgressException} (or a
 *       wait), since the claim is still held; once the lease has ended: the claim, taken over with
 *       {@link LeaseContext#recovery()} {@code true}; the effect runs again and must reconcile with
 *       what the first run did (look its result up by the idempotency key, pass the key
 *       downstream);
 *   <li>{@link Phase#COMMIT}, if the transaction did not commit: the request runs, once.
 *   <li>{@link Phase#PARTIAL}: the operation, resumed after its last recorded step.
 * </ul>
 *
 * <p>So a retry with the same key is safe; a retry with a new key is not. An HTTP integration maps
 * it to 503 Service Unavailable with {@code Retry-After} of {@link #retryAfter()} (RFC 9110 sections
 * 15.6.4 and 10.2.3), saying that the outcome is unknown. Immutable and thread-safe.
 */
public class OutcomeUnknownException extends IdemStoreException {
  private static final long serialVersionUID = 1L;

  /** Which write's outcome is unknown. */
  public enum Phase {
    /** Lease mode: the effect happened; the completion of its claim (its stored response) is in doubt. */
    COMPLETION,
    /** Transactional mode: the commit of the effect's writes together with the stored response is in doubt. */
    COMMIT,
    /**
     * An operation of several steps ({@link dev.idem.core.steps.Steps}) stopped after recording some
     * of them: what they did is recorded as recovery points, the rest has not run, and no final
     * response is stored. The claim stays, so a retry with the same key resumes the operation after
     * its last recorded step (and a completer can finish it); it is never run from the start again.
     */
    PARTIAL
  }

  private final transient IdempotencyKey key;
  private final Duration retryAfter;
  private final Phase phase;

  /**
   * The lease-mode case, {@link Phase#COMPLETION}.
   *
   * @param key the key whose completion failed, never {@code null}
   * @param retryAfter when a retry can expect a final answer (the rest of the lease, at least one
   *     second), never {@code null} or negative
   * @param cause the store's last failure, may be {@code null}
   */
  public OutcomeUnknownException(IdempotencyKey key, Duration retryAfter, @Nullable Throwable cause) {
    this(key, retryAfter, Phase.COMPLETION, cause);
  }

  /**
   * @param key the key whose outcome is unknown, never {@code null}
   * @param retryAfter when a retry can expect a final answer, at least one second, never {@code null}
   * @param phase which write is in doubt, never {@code null}
   * @param cause the store's last failure, may be {@code null}
   * @throws IllegalArgumentException if {@code retryAfter} is negative
   */
  public OutcomeUnknownException(IdempotencyKey key, Duration retryAfter, Phase phase, @Nullable Throwable cause) {
    super(message(key, retryAfter, phase), cause);
    if (retryAfter.isNegative()) {
      throw new IllegalArgumentException("retryAfter must not be negative: " + retryAfter);
    }
    this.key = key;
    this.retryAfter = retryAfter;
    this.phase = phase;
  }

  private static String message(IdempotencyKey key, Duration retryAfter, Phase phase) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(phase, "phase");
    long seconds = Objects.requireNonNull(retryAfter, "retryAfter").toSeconds();
    if (phase == Phase.PARTIAL) {
      return "the operation for idempotency key '" + key + "' ran in part and stopped: the steps it recorded stay recorded;"
          + " retry with the same key after " + seconds + " s (a retry resumes it after its last recorded step, or replays its"
          + " final response)";
    }
    return phase == Phase.COMPLETION
        ? "the effect for idempotency key '" + key + "' ran, but its response could not be stored, so the outcome is unknown;"
            + " retry with the same key after " + seconds + " s (a retry replays the stored response, or takes the claim over as a recovery)"
        : "the transaction for idempotency key '" + key + "' was sent for commit and its acknowledgement was lost, so the outcome"
            + " is unknown: its writes and stored response committed together or not at all; retry with the same key after " + seconds
            + " s (a retry replays the stored response, or runs the request once)";
  }

  /** @return the key whose outcome is unknown, never {@code null} */
  public IdempotencyKey key() {
    return key;
  }

  /** @return the suggested wait before a retry with the same key: at least one second, never {@code null} */
  public Duration retryAfter() {
    return retryAfter;
  }

  /** @return which write's outcome is unknown, never {@code null} */
  public Phase phase() {
    return phase;
  }
}
