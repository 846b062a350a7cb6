package dev.idem.core;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a store knows of one (scope, idempotency key), as {@link KeyStatusReader#status} reads it:
 * exactly one of {@link Absent}, {@link InProgress} or {@link Completed}. A client that lost the
 * answer to a request can ask it (through the HTTP status endpoint) whether to wait, to resend, or
 * that the operation already completed, instead of guessing.
 *
 * <p>Every time is on the store's own clock (the database's or the Redis server's, as for leases),
 * not the caller's; {@link InProgress#leaseRemaining()} is measured on that clock too, so a caller
 * can use it as a wait hint without trusting its own clock to agree.
 *
 * <p>A key status says nothing about which request the key was used for beyond its {@linkplain
 * InProgress#fingerprint() fingerprint}: the status is to be shown only to the key's own principal
 * (the scope carries it), never across principals. Values are immutable and thread-safe.
 */
public sealed interface KeyStatus permits KeyStatus.Absent, KeyStatus.InProgress, KeyStatus.Completed {

  /** @return the status of a key the store has no live record of, never {@code null} */
  static KeyStatus absent() {
    return Absent.INSTANCE;
  }

  /**
   * The store has no live record of the key: never used in this scope, released after a failure
   * (a retry runs the operation), expired after its retention (from the exact instant of expiry,
   * whether or not it was purged), or a claim a broken transaction left (which the next attempt
   * replaces). In transactional mode a claim is not visible before its transaction commits, so an
   * operation still running there reads as absent; a retry then waits on its claim and replays.
   */
  record Absent() implements KeyStatus {
    private static final Absent INSTANCE = new Absent();
  }

  /**
   * A lease-mode claim: an execution holds, or held, the key and has not completed.
   *
   * @param fingerprint the fingerprint recorded with the claim, never {@code null}
   * @param leaseUntil when the holder's lease ends (store clock); after it a retry with the same
   *     fingerprint takes the claim over as a recovery. Never {@code null}
   * @param leaseRemaining how long the lease still runs at the time of the read, zero when it has
   *     run out (and nobody took it over yet); never negative or {@code null}
   * @param step the name of the step the operation is in, for an operation of named steps; {@code
   *     null} for a single-step operation or a store that records no steps
   * @param expiresAt when the record expires if nothing renews or completes it (store clock),
   *     never {@code null}
   */
  record InProgress(Fingerprint fingerprint, Instant leaseUntil, Duration leaseRemaining, @Nullable String step, Instant expiresAt)
      implements KeyStatus {
    /**
     * @throws NullPointerException if a non-null component is {@code null}
     * @throws IllegalArgumentException if {@code leaseRemaining} is negative
     */
    public InProgress {
      Objects.requireNonNull(fingerprint, "fingerprint");
      Objects.requireNonNull(leaseUntil, "leaseUntil");
      Objects.requireNonNull(leaseRemaining, "leaseRemaining");
      Objects.requireNonNull(expiresAt, "expiresAt");
      if (leaseRemaining.isNegative()) {
        throw new IllegalArgumentException("leaseRemaining must not be negative, was " + leaseRemaining);
      }
    }
  }

  /**
   * The operation completed and its response is stored: a retry with the same fingerprint replays
   * it until {@code expiresAt}.
   *
   * @param fingerprint the fingerprint recorded with the key, never {@code null}
   * @param status the stored response's status code (100 to 599; for HTTP the status that a replay
   *     answers)
   * @param completedAt when the response was stored (store clock); {@code null} only for a record
   *     completed by an earlier version of Idem that did not record the time (on Redis)
   * @param expiresAt when the record expires and the key becomes a new operation (store clock);
   *     the retention policy of draft-ietf-httpapi-idempotency-key-header, section 2.3. Never
   *     {@code null}
   */
  record Completed(Fingerprint fingerprint, int status, @Nullable Instant completedAt, Instant expiresAt) implements KeyStatus {
    /**
     * @throws NullPointerException if {@code fingerprint} or {@code expiresAt} is {@code null}
     * @throws IllegalArgumentException if {@code status} is outside 100 to 599
     */
    public Completed {
      Objects.requireNonNull(fingerprint, "fingerprint");
      Objects.requireNonNull(expiresAt, "expiresAt");
      if (status < 100 || status > 599) {
        throw new IllegalArgumentException("status must be between 100 and 599, was " + status);
      }
    }
  }
}
