package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The non-blocking engine makes lease mode's decisions as the blocking one does, on the in-memory
 * store's async side with a clock the test moves; waits are delayed stages on that clock.
 */
class AsyncLeaseIdempotencyTest {

  private final LeaseIdempotencyTest.TestClock clock = new LeaseIdempotencyTest.TestClock();
  private final InMemoryLeaseStore store = new InMemoryLeaseStore(clock);
  private final IdempotentRequest request =
      IdempotentRequest.ofJson("alice", "POST /charges", "k", "{\"amount\":1}".getBytes(StandardCharsets.UTF_8));
  private final AtomicInteger runs = new AtomicInteger();
  /** Pauses asked of the engine, in milliseconds. */
  private final List<Long> pauses = new CopyOnWriteArrayList<>();

  /** An engine whose pauses move the test clock and run at once on the caller's thread. */
  private AsyncLeaseIdempotency.Builder engine(AsyncLeaseStore s) {
    return AsyncLeaseIdempotency.builder(s).time(() -> clock.millis() * 1_000_000L, millis -> task -> {
      pauses.add(millis);
      clock.advance(Duration.ofMillis(millis));
      task.run();
    });
  }

  private CompletionStage<StoredResponse> respond(int status, String body) {
    runs.incrementAndGet();
    return CompletableFuture.completedFuture(StoredResponse.of(status, body));
  }

  private static AttemptResult await(CompletionStage<AttemptResult> stage) throws Exception {
    return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static Throwable failureOf(CompletionStage<AttemptResult> stage) {
    try {
      stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("the stage completed normally");
  }

  @Test
  void executesOnceThenReplaysTheStoredResponse() throws Exception {
    AsyncLeaseIdempotency idem = engine(store).build();
    AttemptResult first = await(idem.attempt(request, ctx -> respond(201, "charged")));
    AttemptResult second = await(idem.attempt(request, ctx -> respond(201, "charged again")));
    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(first.outcomeOrThrow().stored()).isTrue();
    assertThat(second.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(second.outcomeOrThrow().response()).isEqualTo(StoredResponse.of(201, "charged"));
    assertThat(runs).hasValue(1);
  }

  @Test
  void anotherPayloadUnderTheKeyIsAReuseAndDoesNotRun() throws Exception {
    AsyncLeaseIdempotency idem = engine(store).build();
    await(idem.attempt(request, ctx -> respond(201, "charged")));
    IdempotentRequest other = IdempotentRequest.ofJson("alice", "POST /charges", "k", "{\"amount\":2}".getBytes(StandardCharsets.UTF_8));
    AttemptResult reused = await(idem.attempt(other, ctx -> respond(201, "must not run")));
    assertThat(reused.kind()).isEqualTo(AttemptResult.Kind.KEY_REUSED);
    assertThat(runs).hasValue(1);
  }

  @Test
  void aLiveLeaseIsInProgressWithTheRestOfTheLeaseAsRetryAfter() throws Exception {
    store.claim(request, "other", Duration.ofMillis(2_500), Duration.ofSeconds(60));
    AttemptResult busy = await(engine(store).build().attempt(request, ctx -> respond(201, "must not run")));
    assertThat(busy.kind()).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
    assertThat(busy.retryAfter()).isEqualTo(Duration.ofSeconds(3));
    assertThat(runs).hasValue(0);
    assertThat(pauses).as("fail-fast does not wait").isEmpty();
  }

  @Test
  void aDuplicateThatWaitsPollsWithDelayedStagesAndReplaysWhenTheOwnerCompletes() throws Exception {
    store.claim(request, "other", Duration.ofSeconds(30), Duration.ofSeconds(60));
    AtomicInteger waits = new AtomicInteger();
    AsyncLeaseStore completingAfterThreeClaims = new DelegatingStore(store) {
      final AtomicInteger claims = new AtomicInteger();

      @Override
      public CompletionStage<ClaimResult> claimAsync(IdempotentRequest r, String owner, Duration lease, Duration retention) {
        if (claims.incrementAndGet() == 3) {
          store.complete(r.scope(), r.key(), "other", StoredResponse.of(201, "theirs"), retention);
        }
        return super.claimAsync(r, owner, lease, retention);
      }
    };
    AsyncLeaseIdempotency idem = engine(completingAfterThreeClaims)
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(5)))
        .listener(new IdemListener() {
          @Override
          public void waiting(IdempotentRequest r) {
            waits.incrementAndGet();
          }
        })
        .build();
    AttemptResult result = await(idem.attempt(request, ctx -> respond(201, "must not run")));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(result.outcomeOrThrow().response().bodyAsString()).isEqualTo("theirs");
    assertThat(pauses).as("10 ms, then doubled").containsExactly(10L, 20L);
    assertThat(waits).as("told once").hasValue(1);
    assertThat(runs).hasValue(0);
  }

  @Test
  void aWaitThatRunsOutIsInProgress() throws Exception {
    store.claim(request, "other", Duration.ofSeconds(30), Duration.ofSeconds(60));
    AttemptResult result = await(engine(store).inProgress(InProgressPolicy.waitUpTo(Duration.ofMillis(100))).build()
        .attempt(request, ctx -> respond(201, "must not run")));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
    assertThat(pauses.stream().mapToLong(Long::longValue).sum()).isBetween(100L, 200L);
  }

  @Test
  void aServerErrorIsReleasedSoThatARetryRunsAgain() throws Exception {
    AsyncLeaseIdempotency idem = engine(store).build();
    AttemptResult failed = await(idem.attempt(request, ctx -> respond(503, "down")));
    assertThat(failed.kind()).isEqualTo(AttemptResult.Kind.RELEASED);
    AttemptResult retried = await(idem.attempt(request, ctx -> respond(201, "charged")));
    assertThat(retried.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(runs).hasValue(2);
  }

  @Test
  void anEffectThatFailsReleasesTheClaimAndItsExceptionCompletesTheStage() throws Exception {
    AsyncLeaseIdempotency idem = engine(store).build();
    IllegalArgumentException boom = new IllegalArgumentException("boom");
    assertThat(failureOf(idem.attempt(request, ctx -> CompletableFuture.failedFuture(boom)))).isSameAs(boom);
    assertThat(failureOf(idem.attempt(request, ctx -> {
      throw new IOException("thrown before a stage");
    }))).isInstanceOf(EffectFailedException.class).hasCauseInstanceOf(IOException.class);
    assertThat(failureOf(idem.attempt(request, ctx -> CompletableFuture.completedFuture(null))))
        .isInstanceOf(IllegalStateException.class);
    assertThat(failureOf(idem.attempt(request, ctx -> null))).isInstanceOf(IllegalStateException.class);
    assertThat(await(idem.attempt(request, ctx -> respond(201, "charged"))).kind())
        .as("every failure released the claim").isEqualTo(AttemptResult.Kind.EXECUTED);
  }

  @Test
  void aClaimThatFailsIsAskedAgainWithTheSameOwnerAndAStoreThatStaysDownIsStoreUnavailable() throws Exception {
    List<String> owners = new CopyOnWriteArrayList<>();
    AtomicInteger failuresLeft = new AtomicInteger(2);
    AsyncLeaseStore flaky = new DelegatingStore(store) {
      @Override
      public CompletionStage<ClaimResult> claimAsync(IdempotentRequest r, String owner, Duration lease, Duration retention) {
        owners.add(owner);
        if (failuresLeft.getAndDecrement() > 0) {
          // written, but the acknowledgement is lost
          store.claim(r, owner, lease, retention);
          return CompletableFuture.failedFuture(new IdemStoreException("connection reset", null));
        }
        return super.claimAsync(r, owner, lease, retention);
      }
    };
    AttemptResult result = await(engine(flaky).build().attempt(request, ctx -> respond(201, "charged")));
    assertThat(result.kind()).as("the third try recognises its own claim").isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(owners).hasSize(3).containsOnly(owners.get(0));
    assertThat(pauses).containsExactly(20L, 40L);

    AsyncLeaseStore down = new DelegatingStore(store) {
      @Override
      public CompletionStage<ClaimResult> claimAsync(IdempotentRequest r, String owner, Duration lease, Duration retention) {
        throw new IdemStoreException("down", null); // thrown instead of a failed stage: the same
      }
    };
    IdempotentRequest another = IdempotentRequest.ofJson("alice", "POST /charges", "k2", "{}".getBytes(StandardCharsets.UTF_8));
    AttemptResult unavailable = await(engine(down).build().attempt(another, ctx -> respond(201, "must not run")));
    assertThat(unavailable.kind()).isEqualTo(AttemptResult.Kind.STORE_UNAVAILABLE);
    assertThat(runs).hasValue(1);
  }

  @Test
  void aCompletionThatNeverSucceedsIsOutcomeUnknownWithinTheLease() throws Exception {
    AsyncLeaseStore neverCompletes = new DelegatingStore(store) {
      @Override
      public CompletionStage<Boolean> completeAsync(Scope scope, IdempotencyKey key, String owner, StoredResponse response, Duration retention) {
        return CompletableFuture.failedFuture(new IdemStoreException("down", null));
      }
    };
    AttemptResult result = await(engine(neverCompletes).lease(Duration.ofSeconds(2)).build()
        .attempt(request, ctx -> respond(201, "charged")));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.OUTCOME_UNKNOWN);
    assertThat(pauses).startsWith(10L, 20L, 40L).allSatisfy(p -> assertThat(p).isLessThanOrEqualTo(1000L));
    assertThat(pauses.stream().mapToLong(Long::longValue).sum()).isLessThan(2000L);
    assertThat(runs).hasValue(1);
  }

  @Test
  void aCompletionWhoseClaimWasTakenOverIsALostLease() throws Exception {
    AsyncLeaseStore takenOver = new DelegatingStore(store) {
      @Override
      public CompletionStage<Boolean> completeAsync(Scope scope, IdempotencyKey key, String owner, StoredResponse response, Duration retention) {
        return CompletableFuture.completedFuture(false);
      }
    };
    AttemptResult result = await(engine(takenOver).build().attempt(request, ctx -> respond(201, "charged")));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.OUTCOME_UNKNOWN);
    assertThat(result.failure()).containsInstanceOf(LeaseLostException.class);
  }

  @Test
  void anExpiredLeaseIsTakenOverAsARecoveryAndTheListenerIsTold() throws Exception {
    store.claim(request, "dead", Duration.ofSeconds(1), Duration.ofSeconds(60));
    clock.advance(Duration.ofSeconds(1));
    AtomicInteger takeovers = new AtomicInteger();
    AtomicReference<AttemptResult> told = new AtomicReference<>();
    AtomicReference<LeaseContext> lease = new AtomicReference<>();
    AsyncLeaseIdempotency idem = engine(store).listener(new IdemListener() {
      @Override
      public void takenOver(IdempotentRequest r) {
        takeovers.incrementAndGet();
      }

      @Override
      public void attempted(IdempotentRequest r, AttemptResult result) {
        told.set(result);
      }
    }).build();
    AttemptResult result = await(idem.attempt(request, ctx -> {
      lease.set(ctx.lease());
      return respond(201, "charged");
    }));
    assertThat(result.outcomeOrThrow().recovery()).isTrue();
    assertThat(lease.get().recovery()).isTrue();
    assertThat(takeovers).hasValue(1);
    assertThat(told.get()).isSameAs(result);
  }

  @Test
  void builderValidatesAsTheBlockingOneDoes() {
    assertThatThrownBy(() -> AsyncLeaseIdempotency.builder(store).lease(Duration.ofMillis(5)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> AsyncLeaseIdempotency.builder(store).retention(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> AsyncLeaseIdempotency.builder(store).lease(Duration.ofMinutes(2)).retention(Duration.ofMinutes(1)).build())
        .isInstanceOf(IllegalArgumentException.class);
  }

  /** The default owner tokens are random version 4 UUIDs, made without reading the entropy source each time. */
  @Test
  void defaultOwnerTokensAreDistinctVersion4Uuids() {
    java.util.Set<String> tokens = new java.util.HashSet<>();
    for (int i = 0; i < 1000; i++) {
      String token = AsyncLeaseIdempotency.ownerToken();
      java.util.UUID uuid = java.util.UUID.fromString(token);
      assertThat(uuid.version()).isEqualTo(4);
      assertThat(uuid.variant()).isEqualTo(2);
      tokens.add(token);
    }
    assertThat(tokens).hasSize(1000);
  }

  /** Forwards to another async store; tests override what they break. */
  private static class DelegatingStore implements AsyncLeaseStore {
    private final AsyncLeaseStore target;

    DelegatingStore(AsyncLeaseStore target) {
      this.target = target;
    }

    @Override
    public CompletionStage<ClaimResult> claimAsync(IdempotentRequest r, String owner, Duration lease, Duration retention) {
      return target.claimAsync(r, owner, lease, retention);
    }

    @Override
    public CompletionStage<Boolean> completeAsync(Scope scope, IdempotencyKey key, String owner, StoredResponse response, Duration retention) {
      return target.completeAsync(scope, key, owner, response, retention);
    }

    @Override
    public CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String owner) {
      return target.releaseAsync(scope, key, owner);
    }

    @Override
    public CompletionStage<Long> purgeExpiredAsync(int batchSize) {
      return target.purgeExpiredAsync(batchSize);
    }
  }
}
