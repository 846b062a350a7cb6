package dev.idem.servlet;

import dev.idem.core.IdempotencyEngine;
import dev.idem.testkit.conformance.AnyonceConformance;
import java.net.URI;
import java.util.List;
import java.util.Set;

/**
 * The servlet filter under {@link AnyonceConformance}: {@link IdempotencyFilter}, configured as the
 * runner asks (the starter's defaults), in front of {@link ConformanceFixture} on Jetty ({@link
 * TestServer}). The engine comes from the test class.
 */
final class ServletConformance implements AnyonceConformance.Servers {

  /** The engine of a configuration under test. */
  @FunctionalInterface
  interface Engines {
    /** @return the engine for a vector with these {@code requires} capabilities */
    IdempotencyEngine engine(Set<String> requires);
  }

  private final Engines engines;

  ServletConformance(Engines engines) {
    this.engines = engines;
  }

  @Override
  public AnyonceConformance.Server start(Set<String> requires) throws Exception {
    ConformanceFixture fixture = new ConformanceFixture();
    IdempotencyFilterConfig.Builder b = IdempotencyFilterConfig.builder(engines.engine(requires));
    for (List<String> route : AnyonceConformance.REQUIRED_ROUTES) {
      b.required(route.get(0), route.get(1));
    }
    IdempotencyFilterConfig config = b
        .maxBodyBytes(AnyonceConformance.MAX_BODY_BYTES)
        .maxResponseBytes(AnyonceConformance.MAX_RESPONSE_BYTES)
        .maxRetryAfter(AnyonceConformance.MAX_RETRY_AFTER)
        .build();
    TestServer server = new TestServer(config, fixture);
    return new AnyonceConformance.Server() {
      @Override
      public URI uri(String path) {
        return server.uri(path);
      }

      @Override
      public int invocations() {
        return fixture.invocations();
      }

      @Override
      public void close() {
        server.close();
      }
    };
  }
}
