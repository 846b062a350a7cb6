package dev.idem.servlet;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.testkit.conformance.AnyonceConformance;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every anyonce conformance vector through the filter in lease mode on the in-memory store, with
 * the starter's defaults (lease 30 s, retention 24 h, fail-fast); a vector that requires {@code
 * short-ttl} gets retention 2 s (the suite's bound) and lease 1 s, which the in-memory store
 * enforces exactly.
 */
class ConformanceMemoryLeaseTest {

  final InMemoryLeaseStore store = new InMemoryLeaseStore();

  @TestFactory
  Stream<DynamicTest> vectors() {
    return AnyonceConformance.tests(new ServletConformance(requires -> {
      LeaseIdempotency.Builder b = LeaseIdempotency.builder(store).inProgress(InProgressPolicy.failFast());
      if (requires.contains("short-ttl")) {
        b.lease(Duration.ofSeconds(1)).retention(Duration.ofSeconds(2));
      }
      return b.build();
    }));
  }
}
