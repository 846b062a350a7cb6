package dev.idem.jdbc;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.IdemException;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * What {@link TransactionalIdempotency} does with a duplicate that finds the key busy: one running
 * in this engine (this JVM) is met in memory ({@link #attempt}), one of another instance after its
 * claim gave up ({@link #waitForFirstAttempt}); either way under the engine's {@link
 * InProgressPolicy}. Thread-safe.
 */
final class InFlightAttempts {

  /** The first pause of a duplicate that waits outside any transaction; pauses double up to {@link #MAX_PAUSE}. */
  static final Duration FIRST_PAUSE = Duration.ofMillis(10);
  /** The longest pause between two attempts of a waiting duplicate. */
  static final Duration MAX_PAUSE = Duration.ofMillis(250);

  /** A request's scope and key, for the attempts in flight in this engine. */
  private record InFlight(String principal, String operation, String key) {
    static InFlight of(IdempotentRequest request) {
      return new InFlight(request.scope().principal(), request.scope().operation(), request.key().value());
    }
  }

  /** The engine's one attempt, in its write order; never returns {@code null}. */
  private final BiFunction<IdempotentRequest, Effect, AttemptResult> attemptOnce;
  /** The key's live record, read outside any transaction; as {@link JdbcIdempotency#replay}. */
  private final Function<IdempotentRequest, Optional<Outcome>> lookOutside;
  private final InProgressPolicy inProgress;
  private final IdemListener listener;
  /** The attempts running in this engine, by scope and key; see {@link #attempt}. */
  private final ConcurrentHashMap<InFlight, CompletableFuture<Void>> inFlight = new ConcurrentHashMap<>();

  InFlightAttempts(BiFunction<IdempotentRequest, Effect, AttemptResult> attemptOnce,
      Function<IdempotentRequest, Optional<Outcome>> lookOutside, InProgressPolicy inProgress, IdemListener listener) {
    this.attemptOnce = attemptOnce;
    this.lookOutside = lookOutside;
    this.inProgress = inProgress;
    this.listener = listener;
  }

  /**
   * With bounded claims: a duplicate of an attempt that runs in this engine (this JVM) reads the
   * key's record once, outside any transaction ({@link #storedBeside}), and is replayed if the key
   * completed (the attempt beside it may be a replay too). Otherwise, with fail-fast it is answered
   * in progress at once; with a wait it waits for that attempt to end, holding nothing, and then
   * attempts (a replay, or a run when the first released its key). Attempts of other instances are met by the bounded claim, and then the
   * policy attempts again after pauses ({@link #waitForFirstAttempt}). The database stays the
   * arbiter: this only spares it the duplicates' attempts.
   */
  AttemptResult attempt(IdempotentRequest request, Effect effect) {
    InFlight key = InFlight.of(request);
    long deadline = System.nanoTime() + inProgress.maxWait().toNanos();
    boolean toldWaiting = false;
    while (true) {
      CompletableFuture<Void> mine = new CompletableFuture<>();
      CompletableFuture<Void> running = inFlight.putIfAbsent(key, mine);
      if (running == null) {
        AttemptResult result;
        try {
          result = attemptOnce.apply(request, effect);
        } finally {
          inFlight.remove(key, mine);
          mine.complete(null);
        }
        if (result.kind() != AttemptResult.Kind.IN_PROGRESS || inProgress.maxWait().isZero()) {
          return result;
        }
        // Another instance holds the key: attempt again after pauses, up to what is left of the wait.
        long left = deadline - System.nanoTime();
        return left <= 0 ? result : waitForFirstAttempt(request, effect, result, left, !toldWaiting);
      }
      // The attempt running beside this one may be a replay itself: a completed key is replayed,
      // whatever else runs for it at the same moment (was: 16 concurrent replays of one completed
      // key were answered in progress but for the one that reached the database first).
      AttemptResult stored = storedBeside(request);
      if (stored != null) {
        return stored;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return AttemptResult.inProgress(new RequestInProgressException(request.key(), Duration.ofSeconds(1)));
      }
      if (!toldWaiting) {
        toldWaiting = true;
        try {
          listener.waiting(request);
        } catch (RuntimeException ignored) {
          // a listener must not change the result
        }
      }
      try {
        running.get(left, TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        return AttemptResult.inProgress(new RequestInProgressException(request.key(), Duration.ofSeconds(1)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return AttemptResult.inProgress(new RequestInProgressException(request.key(), Duration.ofSeconds(1)));
      } catch (ExecutionException e) {
        // never completed exceptionally; attempt again
      }
    }
  }

  /**
   * A duplicate of an attempt running in this engine reads the key's record once, outside any
   * transaction, before it answers in progress or waits: a completed record is replayed, and a key
   * reused with another payload is refused, as the database would answer them.
   *
   * @return the record's answer (replayed, key reused, a store failure), or {@code null} when the
   *     key has no completed record (none yet, or a claim in progress)
   */
  private @Nullable AttemptResult storedBeside(IdempotentRequest request) {
    try {
      return lookOutside.apply(request).map(AttemptResult::of).orElse(null);
    } catch (RequestInProgressException e) {
      return null;
    } catch (IdemException e) {
      return AttemptFailures.beforeEffect(e);
    }
  }

  /**
   * A duplicate whose claim gave up on the first attempt's row: attempts again, each in a new
   * transaction, pausing between them without a connection, until it is answered otherwise or the
   * policy's wait has passed.
   */
  AttemptResult waitForFirstAttempt(IdempotentRequest request, Effect effect, AttemptResult first) {
    return waitForFirstAttempt(request, effect, first, inProgress.maxWait().toNanos(), true);
  }

  private AttemptResult waitForFirstAttempt(IdempotentRequest request, Effect effect, AttemptResult first, long waitNanos,
      boolean tellWaiting) {
    if (tellWaiting) {
      try {
        listener.waiting(request);
      } catch (RuntimeException ignored) {
        // a listener must not change the result
      }
    }
    long deadline = System.nanoTime() + waitNanos;
    long pause = FIRST_PAUSE.toNanos();
    AttemptResult result = first;
    while (result.kind() == AttemptResult.Kind.IN_PROGRESS) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return result;
      }
      // Jitter: duplicates that gave up together do not come back together.
      long sleep = Math.min(left, pause / 2 + java.util.concurrent.ThreadLocalRandom.current().nextLong(pause / 2 + 1));
      try {
        java.util.concurrent.TimeUnit.NANOSECONDS.sleep(sleep);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return result;
      }
      pause = Math.min(pause * 2, MAX_PAUSE.toNanos());
      result = attemptOnce.apply(request, effect);
    }
    return result;
  }
}
