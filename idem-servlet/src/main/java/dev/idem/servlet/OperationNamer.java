package dev.idem.servlet;

import org.jspecify.annotations.Nullable;

/**
 * Names the operation of a key's scope after the handler a request reaches rather than after the
 * filter's route: a framework that knows its handlers' path templates (the Spring Boot starter asks
 * Spring MVC's handler mappings) answers {@code /orders/{id}} for {@code POST /orders/7}, where the
 * route is {@code POST /**}. The filter then scopes the key to {@code "POST /orders/{id}"} (with the
 * context path in front when there is one), so that key status, logs and metrics name the route a
 * client called. Implementations must be deterministic (the same method and path always give the
 * same pattern, or a retry would land in another scope), thread-safe and fast: they run on every
 * keyed request.
 */
@FunctionalInterface
public interface OperationNamer {

  /**
   * @param method the request method, never {@code null}
   * @param path the decoded path inside the context ({@code getServletPath() + getPathInfo()}),
   *     never {@code null}
   * @return the path template of the handler the request reaches, starting with {@code /}, or
   *     {@code null} to name the operation after the filter's route (no handler, or none known)
   */
  @Nullable String pathTemplate(String method, String path);
}
