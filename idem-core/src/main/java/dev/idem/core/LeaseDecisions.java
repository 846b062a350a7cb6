package dev.idem.core;

import dev.idem.core.spi.ClaimResult;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The decisions of lease mode, shared by the blocking engine ({@link LeaseIdempotency}) and the
 * non-blocking one ({@link AsyncLeaseIdempotency}) so that both answer a claim, an effect's result
 * and a store's failure the same way: what a claim's answer means, which store failures are tried
 * again and after how long, how long a duplicate waits between polls, what a completion's answer
 * gives, and the limits of the builders. Pure functions without state or I/O: the engines only
 * differ in how they wait (a sleeping thread or a delayed stage). Thread-safe.
 */
final class LeaseDecisions {

  /** How many times a claim is asked when the store fails: the same owner token each time. */
  static final int CLAIM_TRIES = 3;
  /** How many times a release is tried when the store fails. */
  static final int RELEASE_TRIES = 3;
  /** The first pause between completions that failed, in milliseconds; doubled each time. */
  static final long FIRST_COMPLETE_BACKOFF_MILLIS = 10;
  /** The longest pause between completions that failed, in milliseconds. */
  static final long MAX_COMPLETE_BACKOFF_MILLIS = 1000;
  /** The first pause of a duplicate that waits for the owner, in milliseconds; doubled each time. */
  static final long FIRST_POLL_MILLIS = 10;
  /** The longest pause of a duplicate that waits for the owner, in milliseconds. */
  static final long MAX_POLL_MILLIS = 500;

  private LeaseDecisions() {}

  /**
   * What a claim's answer settles without running anything: a key used with another payload is a
   * reuse (draft-ietf-httpapi-idempotency-key-header, section 2.2), and a completed key is
   * replayed.
   *
   * @return the result, or {@code null} when the claim is held by the caller ({@link
   *     ClaimResult.State#CLAIMED}: run the effect) or by another owner ({@link
   *     ClaimResult.State#IN_PROGRESS}: wait or give up)
   */
  static @Nullable AttemptResult settled(IdempotentRequest request, ClaimResult claim) {
    if (!claim.fingerprint().equals(request.fingerprint())) {
      return AttemptResult.keyReused(new IdempotencyKeyReusedException(request.scope(), request.key()));
    }
    if (claim.state() == ClaimResult.State.COMPLETED) {
      // a completed claim always carries its response (ClaimResult.completed requires it)
      return AttemptResult.of(Outcome.replayed(Objects.requireNonNull(claim.response(), "response")));
    }
    return null;
  }

  /**
   * A duplicate that will not wait any longer: in progress, with the rest of the owner's lease in
   * whole seconds, at least 1, as its retry-after (RFC 9110 section 10.2.3).
   */
  static AttemptResult inProgress(IdempotentRequest request, ClaimResult claim) {
    long seconds = Math.max(1, (claim.leaseRemaining().toMillis() + 999) / 1000);
    return AttemptResult.inProgress(new RequestInProgressException(request.key(), Duration.ofSeconds(seconds)));
  }

  /**
   * @param pollMillis the current poll interval
   * @param leftNanos how long the duplicate may still wait, positive
   * @return how long to pause before claiming again, in milliseconds: the poll interval, or a
   *     little more than what is left of the wait when that is shorter
   */
  static long pollPause(long pollMillis, long leftNanos) {
    return Math.min(pollMillis, leftNanos / 1_000_000 + 1);
  }

  /** @return the poll interval after {@code pollMillis}: doubled, at most {@link #MAX_POLL_MILLIS} */
  static long nextPoll(long pollMillis) {
    return Math.min(pollMillis * 2, MAX_POLL_MILLIS);
  }

  /**
   * Whether a claim that failed is asked again with the same owner token. The write may have
   * happened; asking again is safe because the store recognises its own owner's claim and renews
   * it instead of calling it someone else's. A stored response that cannot be read will not become
   * readable by asking again, and anything but a store failure is not the store's to retry.
   *
   * @param failure what the claim failed with
   * @param attempt the attempt that failed, from 1
   */
  static boolean claimAgain(Throwable failure, int attempt) {
    return failure instanceof IdemStoreException && !(failure instanceof StoredResponseUnreadableException)
        && attempt < CLAIM_TRIES;
  }

  /**
   * Whether a release that failed is tried again: a release is safe to repeat.
   *
   * @param failure what the release failed with
   * @param attempt the attempt that failed, from 1
   */
  static boolean releaseAgain(Throwable failure, int attempt) {
    return failure instanceof IdemStoreException && attempt < RELEASE_TRIES;
  }

  /** @return the pause after the {@code attempt}-th failed claim or release, in milliseconds */
  static long storeRetryPause(int attempt) {
    return 20L * attempt;
  }

  /**
   * What an effect that returned {@code response} gave: the response, checked.
   *
   * @throws IllegalStateException if the effect returned {@code null}
   */
  static StoredResponse effectResponse(@Nullable StoredResponse response) {
    if (response == null) {
      throw new IllegalStateException("the effect returned null; it must return the response to store");
    }
    return response;
  }

  /**
   * What an engine throws for an effect that failed with {@code failure} (after releasing the
   * claim): an unchecked exception or an error as it is, a checked exception wrapped in {@link
   * EffectFailedException}.
   *
   * @return a {@link RuntimeException} or an {@link Error}, never {@code null}
   */
  static Throwable effectFailure(Throwable failure) {
    if (failure instanceof RuntimeException || failure instanceof Error) {
      return failure;
    }
    return new EffectFailedException(failure);
  }

  /**
   * The result of an effect whose response the response policy does not store, once its claim's
   * release was tried.
   *
   * @param releaseFailure what the release failed with (the claim then expires with its lease), or
   *     {@code null} when it succeeded
   */
  static AttemptResult released(StoredResponse response, boolean recovery, @Nullable RuntimeException releaseFailure) {
    Outcome released = Outcome.executed(response, false, recovery);
    return releaseFailure == null ? AttemptResult.of(released) : AttemptResult.releaseFailed(released, releaseFailure);
  }

  /**
   * The result of a completion the store answered: stored, or the claim is no longer the caller's
   * (its lease was taken over).
   */
  static AttemptResult completed(IdempotentRequest request, StoredResponse response, boolean recovery, boolean stored) {
    if (!stored) {
      return AttemptResult.leaseLost(new LeaseLostException(request.key(), "complete"));
    }
    return AttemptResult.of(Outcome.executed(response, true, recovery));
  }

  /**
   * Whether a completion that failed is tried again: only a store failure, and only while the lease
   * lasts longer than the next pause.
   *
   * @param leftMillis what is left of the lease on the engine's monotonic clock
   * @param backoffMillis the next pause
   */
  static boolean completeAgain(Throwable failure, long leftMillis, long backoffMillis) {
    return failure instanceof IdemStoreException && leftMillis > backoffMillis;
  }

  /** @return the pause after {@code backoffMillis}: doubled, at most {@link #MAX_COMPLETE_BACKOFF_MILLIS} */
  static long nextCompleteBackoff(long backoffMillis) {
    return Math.min(backoffMillis * 2, MAX_COMPLETE_BACKOFF_MILLIS);
  }

  /**
   * The effect ran and no completion succeeded within the lease: a retry after what is left of the
   * lease (whole seconds, at least 1) replays the response or takes the claim over.
   *
   * @param leftMillis what is left of the lease, may be negative
   */
  static OutcomeUnknownException outcomeUnknown(IdempotentRequest request, long leftMillis, Throwable cause) {
    Duration retryAfter = Duration.ofSeconds(Math.max(1, (Math.max(0, leftMillis) + 999) / 1000));
    return new OutcomeUnknownException(request.key(), retryAfter, cause);
  }

  /** Runs a listener's event; a listener must not change the outcome, so what it throws is ignored. */
  static void notify(Runnable event) {
    try {
      event.run();
    } catch (RuntimeException ignored) {
      // a listener must not change the outcome
    }
  }

  /**
   * @return {@code lease}, checked: from 10 ms to 1 hour
   * @throws IllegalArgumentException if out of range
   */
  static Duration checkLease(Duration lease) {
    Objects.requireNonNull(lease, "lease");
    if (lease.toMillis() < 10 || lease.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("lease must be between 10 ms and 1 hour, was " + lease);
    }
    return lease;
  }

  /**
   * @return {@code retention}, checked: positive, at most 3650 days
   * @throws IllegalArgumentException if out of range
   */
  static Duration checkRetention(Duration retention) {
    Objects.requireNonNull(retention, "retention");
    if (retention.isZero() || retention.isNegative() || retention.compareTo(Duration.ofDays(3650)) > 0) {
      throw new IllegalArgumentException("retention must be positive and at most 3650 days, was " + retention);
    }
    return retention;
  }

  /**
   * @throws IllegalArgumentException if the retention is not longer than the lease: a record would
   *     vanish while its claim is still held, and a duplicate would run the effect again
   */
  static void checkRetentionOutlastsLease(Duration retention, Duration lease) {
    if (retention.compareTo(lease) <= 0) {
      throw new IllegalArgumentException(
          "retention (" + retention + ") must be longer than the lease (" + lease
              + "): a record would expire while its claim is held, and a duplicate would run the effect again");
    }
  }
}
