package dev.idem.spring.openapi;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.webflux.IdempotencyWebFilterConfig;
import dev.idem.webflux.TransactionalEngine;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The WebFlux filter's routes as {@link IdemOpenApi} reads them: whether a route protects a request
 * and requires its key, how long a key is kept, and the problem types. WebFlux routes have no
 * policies of their own (the starter refuses them there), so every route's retention is the filter's
 * engine's: the lease engine's ({@code AsyncLeaseIdempotency#retention}) or what the transactional
 * engine says ({@link dev.idem.webflux.TransactionalEngine#retention}), whichever built them, the
 * starter or the application; {@code idem.retention} only for a transactional engine that does
 * not say. Only loaded with idem-webflux on the class path. Immutable and thread-safe.
 */
final class WebFluxRoutes implements IdemOpenApi.Routes {

  private final IdempotencyWebFilterConfig filter;

  /** @param filter the WebFlux filter's configuration, never {@code null} */
  WebFluxRoutes(IdempotencyWebFilterConfig filter) {
    this.filter = Objects.requireNonNull(filter, "filter");
  }

  @Override
  public IdemOpenApi.@Nullable Protection protection(String method, String path) {
    IdempotencyWebFilterConfig.Route route = filter.routeFor(method, path);
    if (route == null) {
      return null;
    }
    Optional<Duration> kept = filter.leaseEngine().map(AsyncLeaseIdempotency::retention)
        .or(() -> filter.transactionalEngine().flatMap(TransactionalEngine::retention));
    return new IdemOpenApi.Protection(route.keyRequired(), kept);
  }

  @Override
  public @Nullable String problemType(String name) {
    return filter.problemType(name);
  }
}
