package dev.idem.core;

import dev.idem.core.LeaseContext;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Engine rules and exact time boundaries, on the in-memory store with a clock the test moves. */
class LeaseIdempotencyTest {

  /** A clock that only moves when told to. */
  static final class TestClock extends Clock {
    private long millis = 1_000_000;

    void advance(Duration d) {
      millis += d.toMillis();
    }

    @Override
    public long millis() {
      return millis;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis);
    }

    @Override
    public ZoneOffset getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException();
    }
  }

  private final TestClock clock = new TestClock();
  private final InMemoryLeaseStore store = new InMemoryLeaseStore(clock);
  private final IdempotentRequest request =
      IdempotentRequest.ofJson("alice", "POST /charges", "k", "{\"amount\":1}".getBytes(StandardCharsets.UTF_8));

  @Test
  void aRecordIsAbsentFromTheExactInstantOfItsExpiry() {
    store.claim(request, "a", Duration.ofSeconds(10), Duration.ofSeconds(60));
    assertThat(store.complete(request.scope(), request.key(), "a", StoredResponse.of(201, "x"), Duration.ofSeconds(60))).isTrue();
    clock.advance(Duration.ofMillis(59_999));
    assertThat(store.claim(request, "b", Duration.ofSeconds(10), Duration.ofSeconds(60)).state()).isEqualTo(ClaimResult.State.COMPLETED);
    clock.advance(Duration.ofMillis(1));
    assertThat(store.claim(request, "b", Duration.ofSeconds(10), Duration.ofSeconds(60)).state())
        .as("at expiresAt exactly, the record counts as absent")
        .isEqualTo(ClaimResult.State.CLAIMED);
  }

  @Test
  void aLeaseCanBeTakenOverFromTheExactInstantItEnds() {
    store.claim(request, "a", Duration.ofSeconds(10), Duration.ofSeconds(60));
    clock.advance(Duration.ofMillis(9_999));
    assertThat(store.claim(request, "b", Duration.ofSeconds(10), Duration.ofSeconds(60)).state()).isEqualTo(ClaimResult.State.IN_PROGRESS);
    clock.advance(Duration.ofMillis(1));
    ClaimResult takeover = store.claim(request, "b", Duration.ofSeconds(10), Duration.ofSeconds(60));
    assertThat(takeover.state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(takeover.recovery()).isTrue();
  }

  @Test
  void anExpiredRecordIsNotCompletedOrReleasedByItsFormerOwner() {
    store.claim(request, "a", Duration.ofSeconds(10), Duration.ofSeconds(60));
    clock.advance(Duration.ofSeconds(60));
    assertThat(store.complete(request.scope(), request.key(), "a", StoredResponse.of(201, "x"), Duration.ofSeconds(60))).isFalse();
    assertThat(store.release(request.scope(), request.key(), "a")).as("nothing is held: as after a release").isTrue();
    assertThat(store.purgeExpired(10)).as("and the release changed nothing").isEqualTo(1);
    assertThat(store.size()).isZero();
  }

  @Test
  void aClaimWhoseWriteOutcomeWasUnknownIsRecognisedAsOurOwn() {
    AtomicInteger calls = new AtomicInteger();
    LeaseStore flaky = new Forwarding(store) {
      @Override
      public ClaimResult claim(IdempotentRequest r, String owner, Duration lease, Duration retention) {
        ClaimResult result = super.claim(r, owner, lease, retention);
        if (calls.incrementAndGet() == 1) {
          throw new IdemStoreException("connection reset after the claim was written", null);
        }
        return result;
      }
    };
    LeaseIdempotency idem = LeaseIdempotency.builder(flaky).build();
    Outcome outcome = idem.execute(request, ctx -> StoredResponse.of(201, "done"));
    assertThat(outcome.replayed()).isFalse();
    assertThat(outcome.recovery()).isFalse();
    assertThat(calls).hasValue(2);
  }

  @Test
  void aStoreThatStaysDownIsAStoreErrorAndTheEffectDoesNotRun() {
    LeaseStore down = new Forwarding(store) {
      @Override
      public ClaimResult claim(IdempotentRequest r, String owner, Duration lease, Duration retention) {
        throw new IdemStoreException("connection refused", null);
      }
    };
    AtomicInteger ran = new AtomicInteger();
    assertThatThrownBy(() -> LeaseIdempotency.builder(down).build().execute(request, ctx -> {
          ran.incrementAndGet();
          return StoredResponse.of(201, "x");
        }))
        .isInstanceOf(IdemStoreException.class);
    assertThat(ran).hasValue(0);
  }

  @Test
  void aCheckedExceptionIsWrappedAndTheClaimReleased() {
    LeaseIdempotency idem = LeaseIdempotency.builder(store).build();
    assertThatThrownBy(() -> idem.execute(request, ctx -> {
          throw new IOException("provider unreachable");
        }))
        .isInstanceOf(EffectFailedException.class)
        .hasCauseInstanceOf(IOException.class);
    assertThat(store.size()).isZero();
  }

  @Test
  void anEffectThatReturnsNullReleasesTheClaim() {
    LeaseIdempotency idem = LeaseIdempotency.builder(store).build();
    assertThatThrownBy(() -> idem.execute(request, ctx -> null)).isInstanceOf(IllegalStateException.class);
    assertThat(store.size()).isZero();
  }

  @Test
  void theListenerHearsExecutionsReplaysRejectionsAndTakeovers() {
    List<String> events = new CopyOnWriteArrayList<>();
    IdemListener listener = new IdemListener() {
      @Override
      public void executed(IdempotentRequest r, Outcome o) {
        events.add("executed" + (o.recovery() ? "+recovery" : ""));
      }

      @Override
      public void replayed(IdempotentRequest r) {
        events.add("replayed");
      }

      @Override
      public void rejected(IdempotentRequest r, String reason) {
        events.add("rejected:" + reason);
      }

      @Override
      public void takenOver(IdempotentRequest r) {
        events.add("takenOver");
      }
    };
    LeaseIdempotency idem = LeaseIdempotency.builder(store).lease(Duration.ofSeconds(10)).listener(listener).build();
    idem.execute(request, ctx -> StoredResponse.of(201, "a"));
    idem.execute(request, ctx -> StoredResponse.of(201, "b"));
    IdempotentRequest other = IdempotentRequest.ofJson("alice", "POST /charges", "k", "{\"amount\":2}".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> idem.execute(other, ctx -> StoredResponse.of(201, "c"))).isInstanceOf(IdempotencyKeyReusedException.class);
    IdempotentRequest stalled = IdempotentRequest.ofJson("alice", "POST /charges", "k2", "{}".getBytes(StandardCharsets.UTF_8));
    store.claim(stalled, "dead", Duration.ofSeconds(10), Duration.ofSeconds(60));
    assertThatThrownBy(() -> idem.execute(stalled, ctx -> StoredResponse.of(201, "d"))).isInstanceOf(RequestInProgressException.class);
    clock.advance(Duration.ofSeconds(10));
    idem.execute(stalled, ctx -> StoredResponse.of(201, "e"));
    assertThat(events).containsExactly(
        "executed", "replayed", "rejected:key-reused", "rejected:in-progress", "takenOver", "executed+recovery");
  }

  // ------------------------------------------------------------------ a completion that fails

  /** Engine time on the test clock: sleeping moves the store's clock and the engine's together. */
  private LeaseIdempotency.Builder onTestClock(LeaseStore s) {
    return LeaseIdempotency.builder(s).time(() -> clock.millis() * 1_000_000L, millis -> clock.advance(Duration.ofMillis(millis)));
  }

  /** A store whose completes fail: before writing, or after writing with the acknowledgement lost. */
  private static final class FailingCompletes extends Forwarding {
    final AtomicInteger completes = new AtomicInteger();
    final Set<String> owners = ConcurrentHashMap.newKeySet();
    final int failures;
    final boolean written;

    FailingCompletes(LeaseStore delegate, int failures, boolean written) {
      super(delegate);
      this.failures = failures;
      this.written = written;
    }

    @Override
    public boolean complete(Scope scope, IdempotencyKey key, String owner, StoredResponse response, Duration retention) {
      owners.add(owner);
      if (completes.incrementAndGet() <= failures) {
        if (written) {
          super.complete(scope, key, owner, response, retention);
          throw new IdemStoreException("connection reset after the completion was written", null);
        }
        throw new IdemStoreException("connection refused before the completion was written", null);
      }
      return super.complete(scope, key, owner, response, retention);
    }
  }

  @Test
  void aCompletionThatFailsBeforeWritingIsRetriedWithTheSameOwnerAndStored() {
    FailingCompletes flaky = new FailingCompletes(store, 3, false);
    AtomicInteger effects = new AtomicInteger();
    LeaseIdempotency idem = onTestClock(flaky).lease(Duration.ofSeconds(10)).build();
    Outcome first = idem.execute(request, ctx -> StoredResponse.of(201, "note " + effects.incrementAndGet()));
    assertThat(first.stored()).isTrue();
    assertThat(flaky.completes).hasValue(4);
    assertThat(flaky.owners).as("every try with the same owner token").hasSize(1);
    Outcome retry = idem.execute(request, ctx -> StoredResponse.of(201, "note " + effects.incrementAndGet()));
    assertThat(retry.replayed()).isTrue();
    assertThat(retry.response()).as("the answer sent is the one replayed").isEqualTo(first.response());
    assertThat(effects).hasValue(1);
  }

  @Test
  void aCompletionWrittenWithItsAcknowledgementLostIsRecognisedOnRetryAndNotALostLease() {
    FailingCompletes flaky = new FailingCompletes(store, 1, true);
    AtomicInteger effects = new AtomicInteger();
    LeaseIdempotency idem = onTestClock(flaky).lease(Duration.ofSeconds(10)).build();
    Outcome first = idem.execute(request, ctx -> StoredResponse.of(201, "note " + effects.incrementAndGet()));
    assertThat(first.stored()).isTrue();
    assertThat(flaky.completes).hasValue(2);
    clock.advance(Duration.ofSeconds(11)); // past the lease: nothing left to take over
    Outcome retry = idem.execute(request, ctx -> StoredResponse.of(201, "note " + effects.incrementAndGet()));
    assertThat(retry.replayed()).isTrue();
    assertThat(retry.response()).isEqualTo(first.response());
    assertThat(effects).hasValue(1);
  }

  @Test
  void aCompletionThatNeverSucceedsIsReportedAsUnknownAndARetryAfterTheLeaseIsARecovery() {
    FailingCompletes down = new FailingCompletes(store, Integer.MAX_VALUE, false);
    LeaseIdempotency idem = onTestClock(down).lease(Duration.ofSeconds(10)).build();
    long start = clock.millis();
    assertThatThrownBy(() -> idem.execute(request, ctx -> StoredResponse.of(201, "note 1")))
        .isInstanceOfSatisfying(OutcomeUnknownException.class, e -> {
          assertThat(e.retryAfter()).isBetween(Duration.ofSeconds(1), Duration.ofSeconds(10));
          assertThat(e.key()).isEqualTo(request.key());
          assertThat(e.getCause()).hasMessageContaining("connection refused");
          assertThat(e.getMessage()).contains("unknown").contains("same key");
        });
    assertThat(clock.millis() - start).as("retried within the lease, not beyond").isLessThanOrEqualTo(10_000);
    assertThat(down.completes.get()).as("with a bounded backoff").isBetween(5, 40);

    assertThatThrownBy(() -> idem.execute(request, ctx -> StoredResponse.of(201, "too early")))
        .as("the claim is still held until the lease ends").isInstanceOf(RequestInProgressException.class);
    clock.advance(Duration.ofSeconds(10));
    boolean[] recovery = {false};
    Outcome later = LeaseIdempotency.builder(store).lease(Duration.ofSeconds(10)).build().execute(request, context -> {
      LeaseContext ctx = context.lease();
      recovery[0] = ctx.recovery();
      return StoredResponse.of(201, "note 1, found again");
    });
    assertThat(recovery[0]).as("the handler is told to reconcile").isTrue();
    assertThat(later.recovery()).isTrue();
    assertThat(later.stored()).isTrue();
  }

  @Test
  void anEffectThatOutlastsItsLeaseStillCompletesOnceAndOtherwiseReportsUnknownAtOnce() {
    FailingCompletes down = new FailingCompletes(store, Integer.MAX_VALUE, false);
    LeaseIdempotency idem = onTestClock(down).lease(Duration.ofSeconds(1)).build();
    assertThatThrownBy(() -> idem.execute(request, ctx -> {
          clock.advance(Duration.ofSeconds(2));
          return StoredResponse.of(201, "slow");
        }))
        .isInstanceOfSatisfying(OutcomeUnknownException.class, e -> assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(1)));
    assertThat(down.completes).as("one try: the lease is over").hasValue(1);
  }

  @Test
  void twoPercentOfCompletionsDroppedGiveNoDuplicateEffects() {
    // The fault campaign's case: 3,000 operations, 2 % of completions fail (half before the
    // write, half with the write done and the acknowledgement lost); each operation is retried
    // with its key, past the lease when refused as in progress, until it has a final answer.
    Random random = new Random(11);
    Map<String, AtomicInteger> effectsPerKey = new HashMap<>();
    Map<String, Set<String>> answersPerKey = new HashMap<>();
    LeaseStore flaky = new Forwarding(store) {
      @Override
      public boolean complete(Scope scope, IdempotencyKey key, String owner, StoredResponse response, Duration retention) {
        double r = random.nextDouble();
        if (r < 0.01) {
          throw new IdemStoreException("dropped before the write", null);
        }
        boolean done = super.complete(scope, key, owner, response, retention);
        if (r < 0.02) {
          throw new IdemStoreException("dropped after the write", null);
        }
        return done;
      }
    };
    LeaseIdempotency idem = onTestClock(flaky).lease(Duration.ofSeconds(5)).build();
    int unknown = 0;
    for (int i = 0; i < 3000; i++) {
      String key = "op-" + i;
      IdempotentRequest r = IdempotentRequest.ofJson("alice", "POST /notes", key, ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8));
      AtomicInteger effects = effectsPerKey.computeIfAbsent(key, k -> new AtomicInteger());
      for (int attempt = 0; ; attempt++) {
        try {
          Outcome o = idem.execute(r, ctx -> StoredResponse.of(201, key + " effect " + effects.incrementAndGet()));
          answersPerKey.computeIfAbsent(key, k -> new HashSet<>()).add(o.response().bodyAsString());
          break;
        } catch (IdemException e) { // outcome unknown, in progress, lease lost: retry later, same key
          unknown++;
          clock.advance(Duration.ofSeconds(6));
        }
        assertThat(attempt).isLessThan(50);
      }
    }
    assertThat(effectsPerKey.values()).as("one effect per key").allSatisfy(n -> assertThat(n).hasValue(1));
    assertThat(answersPerKey.values()).as("one answer per key").allSatisfy(a -> assertThat(a).hasSize(1));
    assertThat(unknown).as("every failure was retried within the lease, invisible to the caller").isZero();
  }

  @Test
  void builderValidatesEagerly() {
    assertThatThrownBy(() -> LeaseIdempotency.builder(store).lease(Duration.ofMillis(5))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> LeaseIdempotency.builder(store).retention(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> LeaseIdempotency.builder(store).lease(Duration.ofMinutes(2)).retention(Duration.ofMinutes(2)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must be longer than the lease");
    assertThatThrownBy(() -> InProgressPolicy.waitUpTo(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> LeaseIdempotency.builder(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void standardResponsePolicyStoresSuccessesAndClientErrorsOnly() {
    ResponsePolicy p = ResponsePolicy.standard();
    for (int s : new int[] {200, 201, 204, 301, 400, 401, 404, 409, 422}) {
      assertThat(p.shouldStore(StoredResponse.of(s, ""))).as("%d", s).isTrue();
    }
    for (int s : new int[] {406, 408, 425, 429, 500, 502, 503, 504}) {
      assertThat(p.shouldStore(StoredResponse.of(s, ""))).as("%d", s).isFalse();
    }
  }

  /** Forwards every call to another store. */
  private static class Forwarding implements LeaseStore {
    private final LeaseStore delegate;

    Forwarding(LeaseStore delegate) {
      this.delegate = delegate;
    }

    @Override
    public ClaimResult claim(IdempotentRequest r, String owner, Duration lease, Duration retention) {
      return delegate.claim(r, owner, lease, retention);
    }

    @Override
    public boolean complete(Scope scope, IdempotencyKey key, String owner, StoredResponse response, Duration retention) {
      return delegate.complete(scope, key, owner, response, retention);
    }

    @Override
    public boolean release(Scope scope, IdempotencyKey key, String owner) {
      return delegate.release(scope, key, owner);
    }

    @Override
    public long purgeExpired(int batchSize) {
      return delegate.purgeExpired(batchSize);
    }
  }

  /**
   * The engine contract: refusals and store failures are results that say what happened, not
   * exceptions, and the listener hears of each attempt once, through {@code attempted}.
   */
  @Test
  void attemptSaysWhatHappenedInsteadOfThrowingAndTellsTheListenerOnce() {
    List<String> heard = new ArrayList<>();
    IdemListener listener = new IdemListener() {
      @Override
      public void attempted(IdempotentRequest r, AttemptResult result) {
        heard.add(result.kind().name());
      }
    };
    LeaseIdempotency idem = LeaseIdempotency.builder(store).lease(Duration.ofSeconds(10)).listener(listener).build();
    AttemptResult executed = idem.attempt(request, ctx -> {
      assertThat(ctx.inTransaction()).isFalse();
      assertThat(ctx.lease().key()).isEqualTo(request.key());
      assertThatThrownBy(ctx::connection).isInstanceOf(IllegalStateException.class).hasMessageContaining("lease mode");
      return StoredResponse.of(201, "a");
    });
    assertThat(executed.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(executed.ran()).isTrue();
    assertThat(idem.attempt(request, ctx -> StoredResponse.of(201, "b")).outcome().orElseThrow().response().bodyAsString()).isEqualTo("a");

    IdempotentRequest reused = IdempotentRequest.ofJson("alice", "POST /charges", "k", "{\"amount\":2}".getBytes(StandardCharsets.UTF_8));
    AttemptResult refused = idem.attempt(reused, ctx -> StoredResponse.of(201, "never"));
    assertThat(refused.kind()).isEqualTo(AttemptResult.Kind.KEY_REUSED);
    assertThat(refused.failure()).containsInstanceOf(IdempotencyKeyReusedException.class);

    IdempotentRequest held = IdempotentRequest.ofJson("alice", "POST /charges", "held", "{}".getBytes(StandardCharsets.UTF_8));
    store.claim(held, "someone else", Duration.ofSeconds(10), Duration.ofSeconds(60));
    AttemptResult busy = idem.attempt(held, ctx -> StoredResponse.of(201, "never"));
    assertThat(busy.kind()).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
    assertThat(busy.retryAfter()).isEqualTo(Duration.ofSeconds(10));
    assertThat(busy.ran()).isFalse();

    IdempotentRequest failing = IdempotentRequest.ofJson("alice", "POST /charges", "503", "{}".getBytes(StandardCharsets.UTF_8));
    AttemptResult released = idem.attempt(failing, ctx -> StoredResponse.of(503, "down"));
    assertThat(released.kind()).isEqualTo(AttemptResult.Kind.RELEASED);
    assertThat(released.outcome().orElseThrow().stored()).isFalse();

    assertThat(heard).containsExactly("EXECUTED", "REPLAYED", "KEY_REUSED", "IN_PROGRESS", "RELEASED");
  }

  @Test
  void attemptReportsAStoreThatStaysDownAsStoreUnavailableWithoutRunningTheEffect() {
    LeaseStore down = new Forwarding(store) {
      @Override
      public ClaimResult claim(IdempotentRequest r, String owner, Duration lease, Duration retention) {
        throw new IdemStoreException("connection refused", null);
      }
    };
    AttemptResult result = LeaseIdempotency.builder(down).build().attempt(request, ctx -> {
      throw new AssertionError("must not run");
    });
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.STORE_UNAVAILABLE);
    assertThat(result.failure()).containsInstanceOf(IdemStoreException.class);
  }

  @Test
  void attemptReportsACompletionThatNeverSucceedsAsOutcomeUnknownAfterTheEffectRan() {
    FailingCompletes down = new FailingCompletes(store, Integer.MAX_VALUE, false);
    LeaseIdempotency idem = onTestClock(down).lease(Duration.ofSeconds(10)).build();
    AttemptResult result = idem.attempt(request, ctx -> StoredResponse.of(201, "note 1"));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.OUTCOME_UNKNOWN);
    assertThat(result.ran()).isTrue();
    assertThat(result.retryAfter()).isBetween(Duration.ofSeconds(1), Duration.ofSeconds(10));
    assertThat(result.rejectionReason()).hasValue("outcome-unknown");
  }
}
