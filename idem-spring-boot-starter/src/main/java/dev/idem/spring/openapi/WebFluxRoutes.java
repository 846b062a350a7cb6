package dev.idem.spring.openapi;

import dev.idem.webflux.IdempotencyWebFilterConfig;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The WebFlux filter's routes as {@link IdemOpenApi} reads them: whether a route protects a request
 * and requires its key, and the problem types. WebFlux routes have no retention of their own (the
 * starter refuses per-route policies there), so each key is kept for {@code idem.retention}. Only
 * loaded with idem-webflux on the class path. Immutable and thread-safe.
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
    return route == null ? null : new IdemOpenApi.Protection(route.keyRequired(), Optional.empty());
  }

  @Override
  public @Nullable String problemType(String name) {
    return filter.problemType(name);
  }
}
