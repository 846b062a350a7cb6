package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link IdemListener#started}: the lease engine opens an observation before it touches the store,
 * the effect runs inside it, and it ends once with the result or the effect's exception; a listener
 * that throws changes nothing.
 */
class AttemptObservationTest {

  private final List<String> events = new ArrayList<>();

  private final IdemListener recording = new IdemListener() {
    @Override
    public Attempt started(IdempotentRequest request, String mode) {
      events.add("started " + mode + " " + request.scope().operation());
      return new Attempt() {
        @Override
        public void ended(AttemptResult result) {
          events.add("ended " + result.kind());
        }

        @Override
        public void failed(Throwable error) {
          events.add("failed " + error.getMessage());
        }
      };
    }

    @Override
    public void attempted(IdempotentRequest request, AttemptResult result) {
      events.add("attempted " + result.kind());
    }
  };

  private static IdempotentRequest request(String body) {
    return IdempotentRequest.ofJson("alice", "POST /charges", "k-1", body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void theEffectRunsInsideTheObservationWhichEndsOnceWithTheResult() {
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).listener(recording).build();
    engine.attempt(request("{\"amount\":1}"), context -> {
      events.add("effect");
      return StoredResponse.of(201, "{}");
    });
    engine.attempt(request("{\"amount\":1}"), context -> {
      throw new AssertionError("a replay runs nothing");
    });
    engine.attempt(request("{\"amount\":2}"), context -> {
      throw new AssertionError("a reused key runs nothing");
    });

    assertThat(events).containsExactly(
        "started lease POST /charges", "effect", "ended EXECUTED", "attempted EXECUTED",
        "started lease POST /charges", "ended REPLAYED", "attempted REPLAYED",
        "started lease POST /charges", "ended KEY_REUSED", "attempted KEY_REUSED");
  }

  @Test
  void anEffectThatThrowsEndsTheObservationWithItsException() {
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).listener(recording).build();
    assertThatThrownBy(() -> engine.attempt(request("{}"), context -> {
      throw new IllegalStateException("payment API down");
    })).hasMessage("payment API down");
    assertThat(events).containsExactly("started lease POST /charges", "failed payment API down");
  }

  @Test
  void aListenerThatThrowsLeavesTheAttemptAsItWas() {
    IdemListener broken = new IdemListener() {
      @Override
      public Attempt started(IdempotentRequest request, String mode) {
        throw new IllegalStateException("observation registry broken");
      }
    };
    IdemListener brokenEnd = new IdemListener() {
      @Override
      public Attempt started(IdempotentRequest request, String mode) {
        return new Attempt() {
          @Override
          public void ended(AttemptResult result) {
            throw new IllegalStateException("exporter broken");
          }

          @Override
          public void failed(Throwable error) {
            throw new IllegalStateException("exporter broken");
          }
        };
      }
    };
    for (IdemListener listener : List.of(broken, brokenEnd)) {
      LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).listener(listener).build();
      AttemptResult result = engine.attempt(request("{}"),
          context -> StoredResponse.of(201, "{}"));
      assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThatThrownBy(() -> LeaseIdempotency.builder(new InMemoryLeaseStore()).listener(listener).build()
          .attempt(request("{\"b\":1}"), context -> {
            throw new IllegalArgumentException("the effect's own");
          })).hasMessage("the effect's own");
    }
  }

  @Test
  void theNonBlockingEngineStartsItsAttemptsWithTheDetachedHook() throws Exception {
    List<String> hooks = new ArrayList<>();
    IdemListener listener = new IdemListener() {
      @Override
      public Attempt started(IdempotentRequest request, String mode) {
        hooks.add("started");
        return Attempt.NONE;
      }

      @Override
      public Attempt startedAsync(IdempotentRequest request, String mode) {
        hooks.add("startedAsync " + mode);
        return Attempt.NONE;
      }
    };
    AsyncLeaseIdempotency.builder(new InMemoryLeaseStore()).listener(listener).build()
        .attempt(request("{}"), c -> java.util.concurrent.CompletableFuture.completedFuture(StoredResponse.of(201, "{}")))
        .toCompletableFuture().get(10, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(hooks).containsExactly("startedAsync lease");
    // a listener that binds nothing to a thread keeps its one hook: the default calls started
    assertThat(new IdemListener() {}.startedAsync(request("{}"), IdemListener.LEASE_MODE)).isSameAs(IdemListener.Attempt.NONE);
  }
}
