package dev.idem.webflux;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InProgressPolicy;
import java.time.Duration;
import java.util.Set;

/**
 * The conformance vectors in lease mode on the in-memory store, with the starter's defaults (lease
 * 30 s, retention 24 h, fail-fast); {@code short-ttl}: retention 2 s and lease 1 s, as the servlet
 * filter's lease-mode run.
 */
class WebFluxConformanceMemoryLeaseTest extends WebFluxConformanceContract {

  @Override
  protected IdempotencyWebFilterConfig.Builder config(Set<String> requires) {
    AsyncLeaseIdempotency.Builder engine = AsyncLeaseIdempotency.builder(new InMemoryLeaseStore()).inProgress(InProgressPolicy.failFast());
    if (requires.contains("short-ttl")) {
      engine.lease(Duration.ofSeconds(1)).retention(Duration.ofSeconds(2));
    }
    return IdempotencyWebFilterConfig.builder(engine.build());
  }
}
