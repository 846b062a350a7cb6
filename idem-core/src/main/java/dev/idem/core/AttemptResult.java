package dev.idem.core;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * What an {@link IdempotencyEngine} did with one attempt: its {@link Kind}, the {@link Outcome} when
 * there is a response to give, and otherwise the exception that describes the refusal or failure
 * (for logs, and for callers that prefer exceptions: {@link #outcomeOrThrow()}).
 *
 * <p>Immutable and thread-safe.
 */
public final class AttemptResult {

  /** What happened. */
  public enum Kind {
    /** The effect ran now and its response is stored with the key; {@link #outcome()} has it. */
    EXECUTED,
    /**
     * The effect ran now, and its response is one the {@link ResponsePolicy} does not store (by
     * default 5xx, 408, 425, 429): the claim was released (lease mode) or the effect's writes rolled
     * back with it (transactional mode), so a retry runs again. {@link #outcome()} has the response
     * to send. In lease mode the release itself may have failed ({@link #failure()} present): the
     * claim then expires with its lease.
     */
    RELEASED,
    /** An earlier attempt ran the effect; {@link #outcome()} has its stored response. */
    REPLAYED,
    /** The key was used in this scope with another request (another fingerprint); nothing ran. */
    KEY_REUSED,
    /**
     * An earlier attempt with the key is still running (lease mode, fail-fast or after the wait; or
     * a claim without a response in the key table); nothing ran. {@link #retryAfter()} says when to
     * retry.
     */
    IN_PROGRESS,
    /**
     * The outcome is unknown: the effect ran, and whether its result was kept with its stored
     * response is not known ({@link OutcomeUnknownException}, or a {@link LeaseLostException}).
     * In lease mode the effect happened and only the completion of its claim is in doubt (no
     * completion succeeded within the lease, or the lease was taken over); in transactional mode
     * the commit was sent and its acknowledgement lost, so the effect's writes and the stored
     * response committed together or not at all. Either way a retry with the same key after
     * {@link #retryAfter()} is safe: it replays the stored response, or runs the effect once more
     * (in lease mode as a recovery, {@link LeaseContext#recovery()}); a retry with a new key is not.
     */
    OUTCOME_UNKNOWN,
    /**
     * Transactional mode: the effect ran, but its transaction did not commit (a statement after the
     * effect failed, a deadlock, the commit was refused by the store): nothing of it is kept and a
     * retry with the same key can succeed.
     */
    ROLLED_BACK,
    /**
     * Transactional mode: the effect ran, but its transaction rolled back because of the request
     * itself (the database refused its data at the commit, the transaction was marked rollback-only
     * while the effect ran, a success answered after an SQL error that aborted the transaction):
     * nothing is kept, and the same request would fail the same way.
     */
    REQUEST_FAILED,
    /** The store could not be used before the effect ran (claim or lookup failed); nothing ran. */
    STORE_UNAVAILABLE,
    /**
     * The key was answered, but its stored response cannot be read (protection at rest refused it,
     * or it is corrupt): nothing ran and nothing is replayed.
     */
    STORED_RESPONSE_UNREADABLE
  }

  private final Kind kind;
  private final @Nullable Outcome outcome;
  private final @Nullable RuntimeException failure;
  private final Duration retryAfter;
  private final @Nullable String reason;

  private AttemptResult(
      Kind kind, @Nullable Outcome outcome, @Nullable RuntimeException failure, Duration retryAfter, @Nullable String reason) {
    this.kind = kind;
    this.outcome = outcome;
    this.failure = failure;
    this.retryAfter = retryAfter;
    this.reason = reason;
  }

  /**
   * @param outcome an executed or replayed outcome, never {@code null}
   * @return {@link Kind#REPLAYED}, {@link Kind#EXECUTED} or {@link Kind#RELEASED}, as the outcome says
   */
  public static AttemptResult of(Outcome outcome) {
    Objects.requireNonNull(outcome, "outcome");
    Kind kind = outcome.replayed() ? Kind.REPLAYED : outcome.stored() ? Kind.EXECUTED : Kind.RELEASED;
    return new AttemptResult(kind, outcome, null, Duration.ZERO, null);
  }

  /**
   * Lease mode: the effect ran and its response was not stored, but the claim could not be released.
   *
   * @param outcome the executed, not stored outcome, never {@code null}
   * @param releaseFailure why the release failed, never {@code null}
   */
  public static AttemptResult releaseFailed(Outcome outcome, RuntimeException releaseFailure) {
    Objects.requireNonNull(outcome, "outcome");
    if (outcome.replayed() || outcome.stored()) {
      throw new IllegalArgumentException("only an executed outcome that was not stored is released: " + outcome);
    }
    return new AttemptResult(Kind.RELEASED, outcome, Objects.requireNonNull(releaseFailure, "releaseFailure"), Duration.ZERO, null);
  }

  /** @param failure the refusal, never {@code null} */
  public static AttemptResult keyReused(IdempotencyKeyReusedException failure) {
    return new AttemptResult(Kind.KEY_REUSED, null, Objects.requireNonNull(failure, "failure"), Duration.ZERO, "key-reused");
  }

  /** @param failure the refusal, with its {@code retryAfter()}, never {@code null} */
  public static AttemptResult inProgress(RequestInProgressException failure) {
    Objects.requireNonNull(failure, "failure");
    return new AttemptResult(Kind.IN_PROGRESS, null, failure, failure.retryAfter(), "in-progress");
  }

  /**
   * @param failure which write's outcome is unknown, never {@code null}; retry after its {@code
   *     retryAfter()}
   * @return {@link Kind#OUTCOME_UNKNOWN} with the reason {@code "outcome-unknown"}
   */
  public static AttemptResult outcomeUnknown(OutcomeUnknownException failure) {
    Objects.requireNonNull(failure, "failure");
    return new AttemptResult(Kind.OUTCOME_UNKNOWN, null, failure, failure.retryAfter(), "outcome-unknown");
  }

  /**
   * @param failure the lease that was taken over before completion, never {@code null}; retry after 1 s
   * @return {@link Kind#OUTCOME_UNKNOWN} with the reason {@code "lease-lost"} (the effect happened;
   *     a lease too short for the effect is the usual cause)
   */
  public static AttemptResult leaseLost(LeaseLostException failure) {
    return new AttemptResult(Kind.OUTCOME_UNKNOWN, null, Objects.requireNonNull(failure, "failure"), Duration.ofSeconds(1), "lease-lost");
  }

  /**
   * @param failure why the transaction did not commit, never {@code null}
   * @param retryCanSucceed {@code true} for {@link Kind#ROLLED_BACK} (the store's failure), {@code
   *     false} for {@link Kind#REQUEST_FAILED} (the request's own)
   */
  public static AttemptResult rolledBack(RuntimeException failure, boolean retryCanSucceed) {
    Objects.requireNonNull(failure, "failure");
    return retryCanSucceed
        ? new AttemptResult(Kind.ROLLED_BACK, null, failure, Duration.ZERO, "rolled-back")
        : new AttemptResult(Kind.REQUEST_FAILED, null, failure, Duration.ZERO, "request-failed");
  }

  /**
   * @param failure the store's failure before the effect ran, never {@code null}
   * @return {@link Kind#STORED_RESPONSE_UNREADABLE} for a {@link StoredResponseUnreadableException},
   *     {@link Kind#STORE_UNAVAILABLE} otherwise
   */
  public static AttemptResult storeFailed(RuntimeException failure) {
    Objects.requireNonNull(failure, "failure");
    Kind kind = failure instanceof StoredResponseUnreadableException ? Kind.STORED_RESPONSE_UNREADABLE : Kind.STORE_UNAVAILABLE;
    return new AttemptResult(kind, null, failure, Duration.ZERO, null);
  }

  /** @return what happened, never {@code null} */
  public Kind kind() {
    return kind;
  }

  /**
   * @return whether the effect ran in this attempt (whatever became of it): {@link Kind#EXECUTED},
   *     {@link Kind#RELEASED}, {@link Kind#OUTCOME_UNKNOWN}, {@link Kind#ROLLED_BACK}, {@link
   *     Kind#REQUEST_FAILED}
   */
  public boolean ran() {
    switch (kind) {
      case EXECUTED:
      case RELEASED:
      case OUTCOME_UNKNOWN:
      case ROLLED_BACK:
      case REQUEST_FAILED:
        return true;
      default:
        return false;
    }
  }

  /**
   * @return the response to give: present for {@link Kind#EXECUTED}, {@link Kind#RELEASED} and
   *     {@link Kind#REPLAYED}, empty otherwise
   */
  public Optional<Outcome> outcome() {
    return Optional.ofNullable(outcome);
  }

  /**
   * @return the refusal or failure: present for every kind without an outcome, and for a {@link
   *     Kind#RELEASED} whose release failed; empty otherwise
   */
  public Optional<RuntimeException> failure() {
    return Optional.ofNullable(failure);
  }

  /**
   * @return when a retry can succeed, at least 1 s, for {@link Kind#IN_PROGRESS} and {@link
   *     Kind#OUTCOME_UNKNOWN}; {@link Duration#ZERO} otherwise
   */
  public Duration retryAfter() {
    return retryAfter;
  }

  /**
   * @return the reason told to {@link IdemListener#rejected} ({@code "key-reused"}, {@code
   *     "in-progress"}, {@code "outcome-unknown"}, {@code "lease-lost"}, {@code "rolled-back"},
   *     {@code "request-failed"}), or empty for the kinds that are no
   *     rejection
   */
  public Optional<String> rejectionReason() {
    return Optional.ofNullable(reason);
  }

  /**
   * For callers that prefer exceptions: the outcome, or the failure thrown.
   *
   * @return the outcome of {@link Kind#EXECUTED}, {@link Kind#REPLAYED}, or {@link Kind#RELEASED}
   *     when the release did not fail; never {@code null}
   * @throws RuntimeException the {@link #failure()} for every other result: {@link
   *     IdempotencyKeyReusedException}, {@link RequestInProgressException}, {@link
   *     OutcomeUnknownException}, {@link LeaseLostException}, {@link IdemStoreException}, {@link
   *     StoredResponseUnreadableException}, or the transaction's failure
   */
  public Outcome outcomeOrThrow() {
    if (failure != null) {
      throw failure;
    }
    // every factory gives a result without a failure its outcome
    return Objects.requireNonNull(outcome, "outcome");
  }

  @Override
  public String toString() {
    return "AttemptResult[" + kind + (outcome != null ? ", " + outcome : "") + (failure != null ? ", " + failure : "") + "]";
  }
}
