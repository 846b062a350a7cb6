package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
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
    public Clock withZone(java.time.ZoneId zone) {
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
    assertThat(store.release(request.scope(), request.key(), "a")).isFalse();
    assertThat(store.purgeExpired(10)).isEqualTo(1);
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
          throw new java.io.IOException("provider unreachable");
        }))
        .isInstanceOf(EffectFailedException.class)
        .hasCauseInstanceOf(java.io.IOException.class);
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
    java.util.List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
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
    for (int s : new int[] {408, 425, 429, 500, 502, 503, 504}) {
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
}
