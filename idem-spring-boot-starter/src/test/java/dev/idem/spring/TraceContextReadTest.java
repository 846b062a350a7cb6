package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.spring.observation.ObservationIdemListener;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * On a blocking engine the attempt's trace context is read (a propagator's inject) only when an
 * answer is stored: a replay or a refusal reads none, and an executed attempt reads it once. It
 * was read at every attempt's start, replays included, a cost the observation benchmark showed.
 */
class TraceContextReadTest {

  private final AtomicInteger reads = new AtomicInteger();
  private final TraceContextPropagation counting = new TraceContextPropagation() {
    @Override
    public Map<String, String> currentContext() {
      reads.incrementAndGet();
      return Map.of("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    }

    @Override
    public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
      return work.get();
    }
  };
  private final Queue<Observation.Context> stopped = new ConcurrentLinkedQueue<>();
  private final ObservationRegistry registry = ObservationsTest.recording(stopped);
  private final LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore())
      .listener(new ObservationIdemListener(registry, IdemListener.NONE, counting))
      .build();

  private static IdempotentRequest request(String body) {
    return IdempotentRequest.ofJson("alice", "POST /notes", "k-1", body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void anExecutedAttemptReadsTheContextOnceAndStoresIt() {
    StoredResponse stored = engine.attempt(request("{}"), ctx -> StoredResponse.of(201, "created"))
        .outcomeOrThrow().response();

    assertThat(reads).hasValue(1);
    assertThat(stored.traceContext()).containsKey("traceparent");
  }

  @Test
  void aReplayAndARefusalReadNoContext() {
    engine.attempt(request("{}"), ctx -> StoredResponse.of(201, "created"));
    reads.set(0);

    engine.attempt(request("{}"), ctx -> StoredResponse.of(201, "again")); // the replay
    engine.attempt(request("{\"other\":1}"), ctx -> StoredResponse.of(201, "other")); // key reused

    assertThat(reads).hasValue(0);
  }
}
