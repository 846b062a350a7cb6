package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.StoredResponse;
import dev.idem.spring.observation.ObservationIdemListener;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * On a non-blocking engine an attempt starts on one thread (an event loop's) and ends on another:
 * its observation must leave nothing current on the thread that started it. The blocking engine's
 * observation was opened on the attempt's thread and closed there; the non-blocking engine used the
 * same hook, so an event loop kept the attempt's observation as its current one after the call
 * returned, and later requests on that thread ran inside it.
 */
class DetachedObservationTest {

  private final Queue<Observation.Context> stopped = new ConcurrentLinkedQueue<>();
  private final ObservationRegistry registry = ObservationsTest.recording(stopped);
  private final ObservationIdemListener listener = new ObservationIdemListener(registry, IdemListener.NONE);

  private static IdempotentRequest request(String key) {
    return IdempotentRequest.ofJson("alice", "POST /notes", key, "{}".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aNonBlockingAttemptLeftItsObservationCurrentOnTheEventLoopThread() throws Exception {
    ExecutorService eventLoop = Executors.newSingleThreadExecutor();
    ExecutorService storeThread = Executors.newSingleThreadExecutor();
    try {
      AsyncLeaseIdempotency engine = AsyncLeaseIdempotency.builder(new InMemoryLeaseStore()).listener(listener).build();
      CompletableFuture<String> handlerRan = new CompletableFuture<>();
      // the attempt starts on the "event loop"; its effect completes later on another thread
      CompletableFuture<AttemptResult> result = CompletableFuture.supplyAsync(() -> engine.attempt(request("k-1"),
          c -> CompletableFuture.supplyAsync(() -> {
            handlerRan.complete(Thread.currentThread().getName());
            return StoredResponse.of(201, "made");
          }, storeThread)), eventLoop).thenCompose(stage -> stage);
      assertThat(result.get(10, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);

      assertThat(eventLoop.submit(registry::getCurrentObservation).get(10, TimeUnit.SECONDS))
          .as("nothing stays current on the thread that started the attempt").isNull();
      assertThat(storeThread.submit(registry::getCurrentObservation).get(10, TimeUnit.SECONDS))
          .as("nor on the thread that ended it").isNull();
      assertThat(stopped).singleElement().satisfies(c -> {
        assertThat(c.getLowCardinalityKeyValue(ObservationIdemListener.OUTCOME).getValue()).isEqualTo("executed");
        assertThat(c.getLowCardinalityKeyValue(ObservationIdemListener.MODE).getValue()).isEqualTo("lease");
      });

      // a replay, ended at once on the same thread, leaves nothing current either
      AttemptResult replay = CompletableFuture.supplyAsync(() -> engine.attempt(request("k-1"),
          c -> CompletableFuture.failedFuture(new AssertionError("a replay runs nothing"))), eventLoop)
          .thenCompose(stage -> stage).get(10, TimeUnit.SECONDS);
      assertThat(replay.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(eventLoop.submit(registry::getCurrentObservation).get(10, TimeUnit.SECONDS)).isNull();
      assertThat(stopped).hasSize(2);
    } finally {
      eventLoop.shutdownNow();
      storeThread.shutdownNow();
    }
  }

  @Test
  void aBlockingAttemptIsCurrentWhileItsEffectRunsAndNotAfter() {
    Observation[] seen = new Observation[1];
    dev.idem.core.LeaseIdempotency.builder(new InMemoryLeaseStore()).listener(listener).build()
        .attempt(request("k-2"), c -> {
          seen[0] = registry.getCurrentObservation();
          return StoredResponse.of(201, "made");
        });
    assertThat(seen[0]).isNotNull();
    assertThat(seen[0].getContext().getName()).isEqualTo(ObservationIdemListener.NAME);
    assertThat(registry.getCurrentObservation()).isNull();
  }

  /** A propagation that threw while the attempt's context was read left the observation current and never stopped. */
  @Test
  void aPropagationThatThrewLeftTheAttemptsObservationOpen() {
    dev.idem.core.spi.TraceContextPropagation throwing = new dev.idem.core.spi.TraceContextPropagation() {
      @Override
      public java.util.Map<String, String> currentContext() {
        throw new IllegalStateException("tracer broke");
      }

      @Override
      public <T> T continueTrace(String operation, java.util.Map<String, String> carrier, java.util.function.Supplier<T> work) {
        return work.get();
      }
    };
    ObservationIdemListener traced = new ObservationIdemListener(registry, IdemListener.NONE, throwing);
    AttemptResult made = dev.idem.core.LeaseIdempotency.builder(new InMemoryLeaseStore()).listener(traced).build()
        .attempt(request("k-3"), c -> StoredResponse.of(201, "made"));
    assertThat(made.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(made.outcomeOrThrow().response().traceContext()).isEmpty();
    assertThat(registry.getCurrentObservation()).isNull();
    assertThat(stopped).hasSize(1);
    IdemListener.Attempt detached = IdemListener.startAsync(traced, request("k-4"), IdemListener.LEASE_MODE);
    assertThat(registry.getCurrentObservation()).isNull();
    detached.ended(made);
    assertThat(stopped).hasSize(2);
  }
}
