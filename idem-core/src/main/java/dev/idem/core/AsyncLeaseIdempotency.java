package dev.idem.core;

import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Lease mode without blocking: what {@link LeaseIdempotency} does, on an {@link AsyncLeaseStore}
 * and an {@link AsyncEffect}, answered by a {@link CompletionStage} instead of a return value, so
 * that it can run on an event loop (Spring WebFlux, Reactor Netty). Depends on nothing but the JDK.
 *
 * <p>The decisions are {@link LeaseIdempotency}'s, made by the same code: the key is claimed with
 * a fresh owner token and a lease; another payload under the key is {@link
 * AttemptResult.Kind#KEY_REUSED}; a completed key is {@link AttemptResult.Kind#REPLAYED}; a live
 * lease of another owner is {@link AttemptResult.Kind#IN_PROGRESS} at once or after waiting, per
 * the {@link InProgressPolicy}; otherwise the effect runs and, per the {@link ResponsePolicy}, its
 * response completes the claim or the claim is released (so that a retry runs again, as after a
 * 5xx). An effect that fails releases the claim. A claim that fails is asked again (3 tries), a
 * completion that fails again with a backoff from 10 ms doubling up to 1 s for as long as the
 * lease lasts ({@link AttemptResult.Kind#OUTCOME_UNKNOWN} after that), a release 3 times; all with
 * the same owner token, which the store's contract makes safe. The listener is told of the same
 * events.
 *
 * <p><b>Threads.</b> Nothing blocks: waiting (a duplicate polling the owner, a pause before asking
 * a failing store again) is a delayed stage ({@link CompletableFuture#delayedExecutor}), never a
 * sleeping thread. The effect and the continuations run on the thread that completed the store's
 * stage (an in-memory store's: the caller's), or after a pause on the delay's executor (by default
 * the common {@link java.util.concurrent.ForkJoinPool}).
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class AsyncLeaseIdempotency {

  /** The owner tokens' generator, seeded once here, never reading a file afterwards ({@link SeededRandom}). Thread-safe. */
  private static final SecureRandom TOKENS = SeededRandom.create();

  /** Makes the executor that runs a task after a pause, in milliseconds. */
  @FunctionalInterface
  interface Delays {
    Executor after(long millis);
  }

  private final AsyncLeaseStore store;
  private final Duration lease;
  private final Duration retention;
  private final InProgressPolicy inProgress;
  private final ResponsePolicy responsePolicy;
  private final Supplier<String> ownerTokens;
  private final IdemListener listener;
  private final LongSupplier nanoTime;
  private final Delays delays;

  private AsyncLeaseIdempotency(Builder b) {
    this.store = b.store;
    this.lease = b.lease;
    this.retention = b.retention;
    this.inProgress = b.inProgress;
    this.responsePolicy = b.responsePolicy;
    this.ownerTokens = b.ownerTokens;
    this.listener = b.listener;
    this.nanoTime = b.nanoTime;
    this.delays = b.delays;
  }

  /**
   * @param store where claims and responses live, never {@code null}
   * @return a builder with lease 30 s, retention 24 h, fail-fast and the standard response policy,
   *     as {@link LeaseIdempotency#builder}'s
   */
  public static Builder builder(AsyncLeaseStore store) {
    return new Builder(store);
  }

  /**
   * @return the listener this engine tells of its attempts ({@link Builder#listener}), never {@code
   *     null}; an HTTP integration tells it too of the requests it refuses before the engine
   *     ({@link IdemListener#refused})
   */
  public IdemListener listener() {
    return listener;
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
   * Runs {@code effect} at most once for the request's scope and key (see the class description)
   * and says what happened, as {@link LeaseIdempotency#attempt} does: {@link
   * AttemptResult.Kind#EXECUTED}, {@link AttemptResult.Kind#RELEASED}, {@link
   * AttemptResult.Kind#REPLAYED}, {@link AttemptResult.Kind#KEY_REUSED}, {@link
   * AttemptResult.Kind#IN_PROGRESS}, {@link AttemptResult.Kind#OUTCOME_UNKNOWN}, {@link
   * AttemptResult.Kind#STORE_UNAVAILABLE} or {@link AttemptResult.Kind#STORED_RESPONSE_UNREADABLE}.
   * Returns without blocking.
   *
   * @param request scope, key and fingerprint, never {@code null}
   * @param effect the operation, never {@code null}; it gets the claim as {@link EffectContext#lease()}
   * @return a stage that completes with the result, never {@code null}; or exceptionally, after
   *     the claim was released, with the effect's unchecked exception or error as it is, {@link
   *     EffectFailedException} for a checked one, or {@link IllegalStateException} if the effect
   *     returned {@code null} or a stage that completed with {@code null}
   * @throws NullPointerException if an argument is {@code null}
   */
  public CompletionStage<AttemptResult> attempt(IdempotentRequest request, AsyncEffect effect) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    IdemListener.Attempt observed = IdemListener.startAsync(listener, request, IdemListener.LEASE_MODE);
    CompletableFuture<AttemptResult> done = new CompletableFuture<>();
    CompletableFuture<AttemptResult> attempt;
    try {
      AsyncEffect traced = observed == IdemListener.Attempt.NONE ? effect : new AsyncEffect() {
        @Override
        @SuppressWarnings("NullAway") // an effect that answers null is refused by run(), with its own message
        public CompletionStage<StoredResponse> run(EffectContext context) throws Exception {
          CompletionStage<StoredResponse> stage = effect.run(context);
          return stage == null ? null : stage.thenApply(response -> IdemListener.withTraceContext(observed, response));
        }
      };
      attempt = attemptOnce(request, traced);
    } catch (RuntimeException | Error e) {
      attempt = CompletableFuture.failedFuture(e);
    }
    attempt.whenComplete((result, error) -> {
      if (error != null) {
        Throwable cause = unwrap(error);
        IdemListener.fail(observed, cause);
        done.completeExceptionally(cause);
      } else {
        IdemListener.end(listener, observed, request, result);
        done.complete(result);
      }
    });
    return done;
  }

  private CompletableFuture<AttemptResult> attemptOnce(IdempotentRequest request, AsyncEffect effect) {
    String owner = ownerTokens.get();
    long deadline = nanoTime.getAsLong() + inProgress.maxWait().toNanos();
    return claimOrWait(request, effect, owner, deadline, LeaseDecisions.FIRST_POLL_MILLIS, false);
  }

  private CompletableFuture<AttemptResult> claimOrWait(
      IdempotentRequest request, AsyncEffect effect, String owner, long deadline, long pollMillis, boolean waited) {
    // The store's lease starts after this instant, so it ends after leaseEnd: a bound for the
    // engine's own retries that needs no agreement between clocks.
    long leaseEnd = nanoTime.getAsLong() + lease.toNanos();
    return claim(request, owner, 1).handle((claim, error) -> {
      if (error != null) {
        Throwable cause = unwrap(error);
        if (cause instanceof IdemException e) {
          return CompletableFuture.completedFuture(AttemptResult.storeFailed(e));
        }
        return CompletableFuture.<AttemptResult>failedFuture(cause);
      }
      AttemptResult settled = LeaseDecisions.settled(request, claim);
      if (settled != null) {
        return CompletableFuture.completedFuture(settled);
      }
      if (claim.state() == ClaimResult.State.CLAIMED) {
        if (claim.recovery()) {
          LeaseDecisions.notify(() -> listener.takenOver(request));
        }
        return run(request, owner, claim.recovery(), effect, leaseEnd);
      }
      long left = deadline - nanoTime.getAsLong();
      if (left <= 0) {
        return CompletableFuture.completedFuture(LeaseDecisions.inProgress(request, claim));
      }
      if (!waited) {
        LeaseDecisions.notify(() -> listener.waiting(request));
      }
      return pause(LeaseDecisions.pollPause(pollMillis, left))
          .thenCompose(v -> claimOrWait(request, effect, owner, deadline, LeaseDecisions.nextPoll(pollMillis), true));
    }).thenCompose(next -> next);
  }

  private CompletableFuture<ClaimResult> claim(IdempotentRequest request, String owner, int attempt) {
    return call(() -> store.claimAsync(request, owner, lease, retention)).handle((claim, error) -> {
      if (error == null) {
        return CompletableFuture.completedFuture(Objects.requireNonNull(claim, "AsyncLeaseStore.claimAsync completed with null"));
      }
      Throwable cause = unwrap(error);
      if (LeaseDecisions.claimAgain(cause, attempt)) {
        return pause(LeaseDecisions.storeRetryPause(attempt)).thenCompose(v -> claim(request, owner, attempt + 1));
      }
      return CompletableFuture.<ClaimResult>failedFuture(cause);
    }).thenCompose(next -> next);
  }

  private CompletableFuture<AttemptResult> run(
      IdempotentRequest request, String owner, boolean recovery, AsyncEffect effect, long leaseEnd) {
    CompletableFuture<StoredResponse> ran;
    try {
      CompletionStage<StoredResponse> stage =
          effect.run(EffectContext.ofLease(new LeaseContext(request.scope(), request.key(), owner, recovery)));
      ran = stage == null
          ? CompletableFuture.failedFuture(new IllegalStateException("the effect returned null; it must return a stage of the response to store"))
          : stage.toCompletableFuture();
    } catch (Throwable t) {
      ran = CompletableFuture.failedFuture(t);
    }
    return ran.handle((response, error) -> {
      StoredResponse checked;
      try {
        if (error != null) {
          throw unwrap(error);
        }
        checked = LeaseDecisions.effectResponse(response);
      } catch (Throwable failure) {
        return release(request, owner, 1).handle((released, releaseError) -> {
          if (releaseError != null) {
            failure.addSuppressed(unwrap(releaseError)); // the claim expires with its lease instead
          }
          return CompletableFuture.<AttemptResult>failedFuture(LeaseDecisions.effectFailure(failure));
        }).thenCompose(next -> next);
      }
      if (!responsePolicy.shouldStore(checked)) {
        return release(request, owner, 1).handle((released, releaseError) -> {
          Throwable cause = releaseError == null ? null : unwrap(releaseError);
          if (cause != null && !(cause instanceof RuntimeException)) {
            throw new CompletionException(cause);
          }
          return LeaseDecisions.released(checked, recovery, (RuntimeException) cause);
        });
      }
      return complete(request, owner, checked, leaseEnd, LeaseDecisions.FIRST_COMPLETE_BACKOFF_MILLIS).handle((stored, completeError) -> {
        if (completeError == null) {
          return LeaseDecisions.completed(request, checked, recovery, Objects.requireNonNull(stored, "stored"));
        }
        Throwable cause = unwrap(completeError);
        if (cause instanceof OutcomeUnknownException unknown) {
          return AttemptResult.outcomeUnknown(unknown);
        }
        throw new CompletionException(cause);
      });
    }).thenCompose(next -> next);
  }

  /**
   * Completes with the same owner token until the store answers or the lease runs out, as {@link
   * LeaseIdempotency} does.
   *
   * @return a stage of the store's answer, or failed with {@link OutcomeUnknownException} if every
   *     try failed within the lease
   */
  private CompletableFuture<Boolean> complete(
      IdempotentRequest request, String owner, StoredResponse response, long leaseEnd, long backoff) {
    return call(() -> store.completeAsync(request.scope(), request.key(), owner, response, retention)).handle((stored, error) -> {
      if (error == null) {
        return CompletableFuture.completedFuture(Objects.requireNonNull(stored, "AsyncLeaseStore.completeAsync completed with null"));
      }
      Throwable cause = unwrap(error);
      if (!(cause instanceof IdemStoreException)) {
        return CompletableFuture.<Boolean>failedFuture(cause);
      }
      long leftMillis = TimeUnit.NANOSECONDS.toMillis(leaseEnd - nanoTime.getAsLong());
      if (!LeaseDecisions.completeAgain(cause, leftMillis, backoff)) {
        return CompletableFuture.<Boolean>failedFuture(LeaseDecisions.outcomeUnknown(request, leftMillis, cause));
      }
      return pause(backoff).thenCompose(v -> complete(request, owner, response, leaseEnd, LeaseDecisions.nextCompleteBackoff(backoff)));
    }).thenCompose(next -> next);
  }

  /** Releases with the same owner token, up to three tries; a release is safe to repeat. */
  private CompletableFuture<Boolean> release(IdempotentRequest request, String owner, int attempt) {
    return call(() -> store.releaseAsync(request.scope(), request.key(), owner)).handle((released, error) -> {
      if (error == null) {
        return CompletableFuture.completedFuture(Boolean.TRUE.equals(released));
      }
      Throwable cause = unwrap(error);
      if (LeaseDecisions.releaseAgain(cause, attempt)) {
        return pause(LeaseDecisions.storeRetryPause(attempt)).thenCompose(v -> release(request, owner, attempt + 1));
      }
      return CompletableFuture.<Boolean>failedFuture(cause);
    }).thenCompose(next -> next);
  }

  private CompletableFuture<@Nullable Void> pause(long millis) {
    return CompletableFuture.runAsync(() -> {}, delays.after(millis));
  }

  /** Calls the store; a method that throws instead of failing its stage, or returns {@code null}, counts as a failed stage. */
  private static <T> CompletableFuture<T> call(Supplier<CompletionStage<T>> operation) {
    try {
      CompletionStage<T> stage = operation.get();
      return stage == null
          ? CompletableFuture.failedFuture(new NullPointerException("the AsyncLeaseStore returned a null stage"))
          : stage.toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * A random (version 4) UUID, as {@link UUID#randomUUID()} makes, from {@link #TOKENS}: no I/O
   * after the generator's seeding, which happens when this class is initialised.
   */
  static String ownerToken() {
    byte[] b = new byte[16];
    TOKENS.nextBytes(b);
    b[6] = (byte) ((b[6] & 0x0f) | 0x40); // version 4
    b[8] = (byte) ((b[8] & 0x3f) | 0x80); // IETF variant
    long msb = 0;
    long lsb = 0;
    for (int i = 0; i < 8; i++) {
      msb = (msb << 8) | (b[i] & 0xff);
      lsb = (lsb << 8) | (b[i + 8] & 0xff);
    }
    return new UUID(msb, lsb).toString();
  }

  private static Throwable unwrap(Throwable t) {
    Throwable cause = t;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }

  /** Builds an {@link AsyncLeaseIdempotency}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final AsyncLeaseStore store;
    private Duration lease = LeaseIdempotency.DEFAULT_LEASE;
    private Duration retention = LeaseIdempotency.DEFAULT_RETENTION;
    private InProgressPolicy inProgress = InProgressPolicy.failFast();
    private ResponsePolicy responsePolicy = ResponsePolicy.standard();
    private Supplier<String> ownerTokens = AsyncLeaseIdempotency::ownerToken;
    private IdemListener listener = IdemListener.NONE;
    private LongSupplier nanoTime = System::nanoTime;
    private Delays delays = millis -> CompletableFuture.delayedExecutor(millis, TimeUnit.MILLISECONDS);

    private Builder(AsyncLeaseStore store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /**
     * @param lease how long a claim is held before another attempt may take it over; from 10 ms to
     *     1 hour, as {@link LeaseIdempotency.Builder#lease}
     * @throws IllegalArgumentException if out of range
     */
    public Builder lease(Duration lease) {
      this.lease = LeaseDecisions.checkLease(lease);
      return this;
    }

    /**
     * @param retention how long a record is kept after completion, at most 3650 days; must be
     *     longer than the lease (checked by {@link #build()}), as {@link
     *     LeaseIdempotency.Builder#retention}
     * @throws IllegalArgumentException if not positive or longer than 3650 days
     */
    public Builder retention(Duration retention) {
      this.retention = LeaseDecisions.checkRetention(retention);
      return this;
    }

    /** @param policy what a duplicate does while the claim is held (it waits without blocking); default fail-fast */
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
     *     characters; default a random (version 4) UUID from a generator seeded once, when this
     *     class is first used, so that making one never reads the operating system's entropy
     *     source ({@link UUID#randomUUID()} may, on the caller's thread). Called on the caller's
     *     thread: it must not block
     */
    public Builder ownerTokens(Supplier<String> tokens) {
      this.ownerTokens = Objects.requireNonNull(tokens, "tokens");
      return this;
    }

    /**
     * @param listener told of executions, replays, rejections, waits and takeovers; default none.
     *     Called on the engine's threads (an event loop): it must not block
     */
    public Builder listener(IdemListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * For tests: the monotonic clock (nanoseconds, as {@link System#nanoTime()}) that bounds waits
     * and retries, and what runs a task after a pause.
     */
    Builder time(LongSupplier nanoTime, Delays delays) {
      this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
      this.delays = Objects.requireNonNull(delays, "delays");
      return this;
    }

    /**
     * @return a new, thread-safe engine
     * @throws IllegalArgumentException if the retention is not longer than the lease
     */
    public AsyncLeaseIdempotency build() {
      LeaseDecisions.checkRetentionOutlastsLease(retention, lease);
      return new AsyncLeaseIdempotency(this);
    }
  }
}
