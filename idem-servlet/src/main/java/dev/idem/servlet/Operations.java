package dev.idem.servlet;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatus;
import dev.idem.core.Scope;
import dev.idem.core.http.RouteOperation;
import jakarta.servlet.http.HttpServletRequest;
import java.util.HashSet;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The route job of {@link IdempotencyFilter}, shared with {@link KeyStatusEndpoint}: the path a
 * route matches, the operation a key's {@link Scope} is named by, and the look for a key under the
 * operation names of an earlier version. Stateless.
 */
final class Operations {

  private Operations() {}

  /**
   * A key's live record under a route's own operation, found by {@link #earlierRecord}.
   *
   * @param route the route whose operation the record is under; its engine answers the request
   * @param scope the record's scope
   * @param status what the store knows of the key there, never absent
   */
  record Earlier(IdempotencyFilterConfig.Route route, Scope scope, KeyStatus status) {}

  /**
   * With {@link IdempotencyFilterConfig.Builder#operationNames} and earlier names to look under:
   * the key's record under the operation of a route that matches the request, whose name differs
   * from the one the request is named by now. Every matching route in order, not only the first:
   * an earlier version may have protected the path with a catch-all that a route of its own now
   * precedes. The filter answers such a request there; the key status endpoint reports it.
   *
   * @param current the operation the request is named by now
   * @return the first such record, or {@code null} when there is none or nothing is looked under
   * @throws RuntimeException the store's failure to read a status
   */
  static @Nullable Earlier earlierRecord(IdempotencyFilterConfig cfg, String method, String path,
      @Nullable String context, String principal, IdempotencyKey key, String current) {
    if (cfg.earlierNames() == null) {
      return null;
    }
    Set<String> looked = new HashSet<>();
    looked.add(current);
    for (IdempotencyFilterConfig.Route r : cfg.routes()) {
      if (!r.matches(method, path)) {
        continue;
      }
      String routeOperation = operation(context, r);
      if (!looked.add(routeOperation)) {
        continue;
      }
      Scope scope = Scope.of(principal, routeOperation);
      KeyStatus status = r.statusReader().orElse(cfg.earlierNames()).status(scope, key);
      if (!(status instanceof KeyStatus.Absent)) {
        return new Earlier(r, scope, status);
      }
    }
    return null;
  }

  /**
   * The scope's operation: the handler's path template when the configuration names operations
   * after handlers ({@link IdempotencyFilterConfig.Builder#operationNames}) and it knows one, with
   * the context path in front as for a route; else the route's ({@link #operation(String,
   * IdempotencyFilterConfig.Route)}).
   */
  static String operation(IdempotencyFilterConfig cfg, String method, String path, @Nullable String context,
      IdempotencyFilterConfig.Route route) {
    OperationNamer namer = cfg.operationNamer();
    String template = namer == null ? null : namer.pathTemplate(method, path);
    if (template == null || !template.startsWith("/")) {
      return operation(context, route);
    }
    return RouteOperation.of(route.method(), context, template);
  }

  /**
   * The route's operation: its {@code "<METHOD> <pattern>"}, with the context path before the
   * pattern when the application is not at the root ({@code "POST /shop/notes"} for the route
   * {@code POST /notes} under {@code /shop}), so that two applications on one store never share a
   * scope. If that is not a valid scope part (longer than {@value Scope#MAX_PART_LENGTH}
   * characters, a control character), it is replaced by {@code "sha256:"} and the 64 hex digits of
   * the SHA-256 of its UTF-8 bytes; no route operation starts so (a method is a token, without
   * {@code ':'}), so it stays distinct.
   */
  static String operation(@Nullable String context, IdempotencyFilterConfig.Route route) {
    if (context == null || context.isEmpty() || context.equals("/")) {
      return route.operation();
    }
    return RouteOperation.of(route.method(), context, route.pattern());
  }

  /** The decoded, normalised path inside the context, as routes match it. */
  static String path(HttpServletRequest req) {
    String servletPath = req.getServletPath();
    String pathInfo = req.getPathInfo();
    String path = (servletPath == null ? "" : servletPath) + (pathInfo == null ? "" : pathInfo);
    return path.isEmpty() ? "/" : path;
  }
}
