package dev.idem.core;

import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Lease mode: runs an effect that lives outside the store (a payment API, an e-mail, a message) at
 * most once per scope and idempotency key, as far as the store can tell.
 *
 * <p>{@link #execute(IdempotentRequest, Effect)}:
 *
 * <ol>
 *   <li>claims the key with a fresh owner token and a lease ({@link LeaseStore#claim});
 *   <li>if the operation completed before, replays its stored response; if the key was used with
 *       another payload, throws {@link IdempotencyKeyReusedException};
 *   <li>if another owner holds a live lease, fails fast or waits, per the {@link InProgressPolicy};
 *   <li>otherwise runs the effect outside any store transaction and then, per the {@link
 *       ResponsePolicy}, completes the claim with the response or releases it. Complete and release
 *       are conditional on the owner token: an owner whose lease was taken over gets {@link
 *       LeaseLostException} and changes nothing.
 * </ol>
 *
 * <p><b>A completion that fails.</b> When the store fails while completing (a dropped connection,
 * a database restart), the engine completes again with the same owner token, with a backoff from
 * 10 ms doubling up to 1 s, for as long as the lease lasts (measured on this JVM's monotonic clock
 * from just before the claim, so never longer than the store's lease). Fencing makes that safe, and
 * every store answers a repeated completion by the owner that already stored the same response as a
 * success, so a write whose acknowledgement was lost counts as done. The response returned is then
 * the one stored, the one every retry will replay. If no completion succeeds within the lease,
 * {@link OutcomeUnknownException} says so truthfully: the effect ran, whether its response is
 * stored is unknown, and a retry with the same key after {@link
 * OutcomeUnknownException#retryAfter()} replays it or takes the claim over as a recovery. A
 * release (after an exception or a response the policy does not store) is tried up to three times.
 *
 * <p>An exception from the effect releases the claim, so a retry runs the operation again. A claim
 * whose lease expired (its owner died or stalled) is taken over by the next attempt, which is told
 * through {@link LeaseContext#recovery()} that the earlier effect may have happened. When a claim
 * write fails with an unknown outcome, the engine asks again with the same owner token, so it
 * recognises its own claim instead of reporting it as in progress.
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class LeaseIdempotency implements IdempotencyEngine {

  /** The default lease: 30 seconds. */
  public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
  /** The default retention: 24 hours. */
  public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);

  /** Waits; {@link Thread#sleep(long)} outside tests. */
  @FunctionalInterface
  interface Sleeper {
    void sleep(long millis) throws InterruptedException;
  }

  private final LeaseStore store;
  private final Duration lease;
  private final Duration retention;
  private final InProgressPolicy inProgress;
  private final ResponsePolicy responsePolicy;
  private final Supplier<String> ownerTokens;
  private final IdemListener listener;
  private final LongSupplier nanoTime;
  private final Sleeper sleeper;

  private LeaseIdempotency(Builder b) {
    this.store = b.store;
    this.lease = b.lease;
    this.retention = b.retention;
    this.inProgress = b.inProgress;
    this.responsePolicy = b.responsePolicy;
    this.ownerTokens = b.ownerTokens;
    this.listener = b.listener;
    this.nanoTime = b.nanoTime;
    this.sleeper = b.sleeper;
  }

  /** @return how long a claim of this engine lasts before another attempt may take it over; positive, never {@code null} */
  public Duration lease() {
    return lease;
  }

  /** @return how long a completed key is kept and replayed; longer than {@link #lease()}, never {@code null} */
  public Duration retention() {
    return retention;
  }

  /**
   * @param store where claims and responses live, never {@code null}
   * @return a builder with lease 30 s, retention 24 h, fail-fast and the standard response policy
   */
  public static Builder builder(LeaseStore store) {
    return new Builder(store);
  }

  /**
   * Runs {@code effect} at most once for the request's scope and key (see the class description).
   *
   * @param request scope, key and fingerprint, never {@code null}
   * @param effect the operation, never {@code null}; it gets the claim as {@link EffectContext#lease()}
   * @return executed (stored or released by the response policy, perhaps a recovery) or replayed;
   *     never {@code null}
   * @throws IdempotencyKeyReusedException if the key was used in this scope with another payload
   * @throws RequestInProgressException if another owner holds the claim and the policy fails fast,
   *     or the wait ran out
   * @throws LeaseLostException if the effect ran but the lease was taken over before completion
   * @throws OutcomeUnknownException if the effect ran but no completion succeeded within the
   *     lease: whether its response is stored is unknown; retry with the same key after its {@code
   *     retryAfter()}
   * @throws EffectFailedException if the effect threw a checked exception (claim released)
   * @throws IllegalStateException if the effect returned {@code null} (claim released)
   * @throws StoredResponseUnreadableException if the key is completed but its stored response
   *     cannot be read (see {@link ResponseProtection}): nothing runs and nothing is replayed
   * @throws IdemStoreException if the store failed
   * @throws RuntimeException any unchecked exception of the effect, as it is (claim released)
   */
  @Override
  public Outcome execute(IdempotentRequest request, Effect effect) {
    Objects.requireNonNull(effect, "effect");
    return attempt(request, effect).outcomeOrThrow();
  }

  /**
   * Runs {@code effect} at most once for the request's scope and key (see the class description)
   * and says what happened instead of throwing: {@link AttemptResult.Kind#EXECUTED}, {@link
   * AttemptResult.Kind#RELEASED} (perhaps with the release's failure), {@link
   * AttemptResult.Kind#REPLAYED}, {@link AttemptResult.Kind#KEY_REUSED}, {@link
   * AttemptResult.Kind#IN_PROGRESS}, {@link AttemptResult.Kind#OUTCOME_UNKNOWN} (lease lost, or
   * no completion within the lease), {@link AttemptResult.Kind#STORE_UNAVAILABLE} or {@link
   * AttemptResult.Kind#STORED_RESPONSE_UNREADABLE}. The effect gets the claim as {@link
   * EffectContext#lease()}. The listener is told of the result.
   *
   * @throws NullPointerException if an argument is {@code null}
   * @throws EffectFailedException if the effect threw a checked exception (claim released)
   * @throws IllegalStateException if the effect returned {@code null} (claim released)
   * @throws RuntimeException any unchecked exception of the effect, as it is (claim released)
   */
  @Override
  public AttemptResult attempt(IdempotentRequest request, Effect effect) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    IdemListener.Attempt observed = IdemListener.start(listener, request, IdemListener.LEASE_MODE);
    AttemptResult result;
    try {
      result = attemptOnce(request, IdemListener.keepingTraceContext(observed, effect));
    } catch (RuntimeException | Error e) {
      IdemListener.fail(observed, e);
      throw e;
    }
    IdemListener.end(listener, observed, request, result);
    return result;
  }

  private AttemptResult attemptOnce(IdempotentRequest request, Effect effect) {
    String owner = ownerTokens.get();
    long deadline = nanoTime.getAsLong() + inProgress.maxWait().toNanos();
    long pollMillis = LeaseDecisions.FIRST_POLL_MILLIS;
    boolean waited = false;
    while (true) {
      // The store's lease starts after this instant, so it ends after leaseEnd: a bound for the
      // engine's own retries that needs no agreement between clocks.
      long leaseEnd = nanoTime.getAsLong() + lease.toNanos();
      ClaimResult claim;
      try {
        claim = claim(request, owner);
      } catch (IdemException e) {
        return AttemptResult.storeFailed(e);
      }
      AttemptResult settled = LeaseDecisions.settled(request, claim);
      if (settled != null) {
        return settled;
      }
      if (claim.state() == ClaimResult.State.CLAIMED) {
        if (claim.recovery()) {
          LeaseDecisions.notify(() -> listener.takenOver(request));
        }
        return run(request, owner, claim.recovery(), effect, leaseEnd);
      }
      long left = deadline - nanoTime.getAsLong();
      if (left <= 0) {
        return LeaseDecisions.inProgress(request, claim);
      }
      if (!waited) {
        waited = true;
        LeaseDecisions.notify(() -> listener.waiting(request));
      }
      try {
        sleep(LeaseDecisions.pollPause(pollMillis, left));
      } catch (IdemException interrupted) {
        return AttemptResult.storeFailed(interrupted);
      }
      pollMillis = LeaseDecisions.nextPoll(pollMillis);
    }
  }

  private ClaimResult claim(IdempotentRequest request, String owner) {
    for (int attempt = 1; ; attempt++) {
      try {
        return Objects.requireNonNull(store.claim(request, owner, lease, retention), "LeaseStore.claim returned null");
      } catch (IdemStoreException e) {
        if (!LeaseDecisions.claimAgain(e, attempt)) {
          throw e;
        }
        sleep(LeaseDecisions.storeRetryPause(attempt));
      }
    }
  }

  private AttemptResult run(IdempotentRequest request, String owner, boolean recovery, Effect effect, long leaseEnd) {
    StoredResponse response;
    try {
      response = LeaseDecisions.effectResponse(
          effect.run(EffectContext.ofLease(new LeaseContext(request.scope(), request.key(), owner, recovery))));
    } catch (Throwable t) {
      try {
        release(request, owner);
      } catch (RuntimeException releaseFailure) {
        t.addSuppressed(releaseFailure); // the claim expires with its lease instead
      }
      Throwable failure = LeaseDecisions.effectFailure(t);
      if (failure instanceof Error error) {
        throw error;
      }
      throw (RuntimeException) failure;
    }
    if (!responsePolicy.shouldStore(response)) {
      RuntimeException releaseFailure = null;
      try {
        release(request, owner);
      } catch (RuntimeException e) {
        releaseFailure = e; // the claim expires with its lease
      }
      return LeaseDecisions.released(response, recovery, releaseFailure);
    }
    boolean stored;
    try {
      stored = complete(request, owner, response, leaseEnd);
    } catch (OutcomeUnknownException unknown) {
      return AttemptResult.outcomeUnknown(unknown);
    }
    return LeaseDecisions.completed(request, response, recovery, stored);
  }

  /**
   * Completes with the same owner token until the store answers or the lease runs out. A store
   * answers a repeated completion of its own owner with the same response as a success, so a
   * write whose acknowledgement was lost is not mistaken for a lost lease.
   *
   * @return the store's answer: {@code true} stored, {@code false} the claim is not ours
   * @throws OutcomeUnknownException if every try failed within the lease
   */
  private boolean complete(IdempotentRequest request, String owner, StoredResponse response, long leaseEnd) {
    long backoff = LeaseDecisions.FIRST_COMPLETE_BACKOFF_MILLIS;
    while (true) {
      try {
        return store.complete(request.scope(), request.key(), owner, response, retention);
      } catch (IdemStoreException e) {
        long leftMillis = TimeUnit.NANOSECONDS.toMillis(leaseEnd - nanoTime.getAsLong());
        if (!LeaseDecisions.completeAgain(e, leftMillis, backoff)) {
          throw LeaseDecisions.outcomeUnknown(request, leftMillis, e);
        }
        try {
          sleeper.sleep(backoff);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          e.addSuppressed(interrupted);
          throw LeaseDecisions.outcomeUnknown(request, leftMillis, e); // the effect ran all the same
        }
        backoff = LeaseDecisions.nextCompleteBackoff(backoff);
      }
    }
  }

  /** Releases with the same owner token, up to three tries; a release is safe to repeat. */
  private void release(IdempotentRequest request, String owner) {
    for (int attempt = 1; ; attempt++) {
      try {
        store.release(request.scope(), request.key(), owner);
        return;
      } catch (IdemStoreException e) {
        if (!LeaseDecisions.releaseAgain(e, attempt)) {
          throw e;
        }
        sleep(LeaseDecisions.storeRetryPause(attempt));
      }
    }
  }

  private void sleep(long millis) {
    try {
      sleeper.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IdemException("interrupted while waiting for an idempotency claim", e);
    }
  }

  /** Builds a {@link LeaseIdempotency}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final LeaseStore store;
    private Duration lease = DEFAULT_LEASE;
    private Duration retention = DEFAULT_RETENTION;
    private InProgressPolicy inProgress = InProgressPolicy.failFast();
    private ResponsePolicy responsePolicy = ResponsePolicy.standard();
    private Supplier<String> ownerTokens = () -> UUID.randomUUID().toString();
    private IdemListener listener = IdemListener.NONE;
    private LongSupplier nanoTime = System::nanoTime;
    private Sleeper sleeper = Thread::sleep;

    private Builder(LeaseStore store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /**
     * @param lease how long a claim is held before another attempt may take it over; from 10 ms to
     *     1 hour. Choose it longer than the effect's slowest run.
     * @throws IllegalArgumentException if out of range
     */
    public Builder lease(Duration lease) {
      this.lease = LeaseDecisions.checkLease(lease);
      return this;
    }

    /**
     * @param retention how long a record is kept after completion, at most 3650 days; must be
     *     longer than the lease (checked by {@link #build()}). What is enforced, the expiry policy
     *     to publish (draft-ietf-httpapi-idempotency-key-header, section 2.3), is the store's:
     *     {@link InMemoryLeaseStore} and the Redis store keep a completed key exactly {@code
     *     retention} after its completion (by the JVM's, or Redis's, clock), the JDBC lease store
     *     at least {@code retention} and at most {@code retention + lease}
     * @throws IllegalArgumentException if not positive or longer than 3650 days
     */
    public Builder retention(Duration retention) {
      this.retention = LeaseDecisions.checkRetention(retention);
      return this;
    }

    /** @param policy what a duplicate does while the claim is held; default fail-fast */
    public Builder inProgress(InProgressPolicy policy) {
      this.inProgress = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** @param policy which responses are stored; default {@link ResponsePolicy#standard()} */
    public Builder responsePolicy(ResponsePolicy policy) {
      this.responsePolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * @param tokens makes a new owner token per execution: unique, 1 to 64 printable ASCII
     *     characters; default a random UUID
     */
    public Builder ownerTokens(Supplier<String> tokens) {
      this.ownerTokens = Objects.requireNonNull(tokens, "tokens");
      return this;
    }

    /** @param listener told of executions, replays, rejections, waits and takeovers; default none */
    public Builder listener(IdemListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * For tests: the monotonic clock (nanoseconds, as {@link System#nanoTime()}) that bounds waits
     * and retries, and what waits.
     */
    Builder time(LongSupplier nanoTime, Sleeper sleeper) {
      this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /**
     * @return a new, thread-safe engine
     * @throws IllegalArgumentException if the retention is not longer than the lease: a record
     *     would vanish while its claim is still held, and a duplicate would run the effect again
     */
    public LeaseIdempotency build() {
      LeaseDecisions.checkRetentionOutlastsLease(retention, lease);
      return new LeaseIdempotency(this);
    }
  }
}
