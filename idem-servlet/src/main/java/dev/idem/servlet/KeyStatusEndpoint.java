package dev.idem.servlet;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponseUnreadableException;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The key status endpoint: {@code GET <path>/{key}?operation=<METHOD pattern>} answers a caller
 * what the store knows of one of its own idempotency keys ({@link KeyStatus}), so that a client
 * whose request ended without an answer (a timeout, a lost connection) can learn whether it
 * completed before it decides to resend. Off unless an application installs it: a servlet filter
 * mounted in front of the application, on the path {@link #DEFAULT_PATH} by default.
 *
 * <p><b>Whose keys.</b> The scope is derived exactly as {@link IdempotencyFilter} derives it: the
 * principal from the filter configuration's {@link dev.idem.core.spi.PrincipalResolver} (or its anonymous
 * principal), and the operation of the configured route whose {@code "<METHOD> <pattern>"} equals
 * the {@code operation} query parameter (or, when none does, of the route the filter matches for
 * a request line {@code "<METHOD> <path>"} given there), with the context path as the filter puts it. A caller
 * therefore only ever reads keys of its own scope; anonymous callers share one scope, as they do
 * for replays, so the endpoint tells them no more than a replay would.
 *
 * <p><b>Answers</b> (all with {@code Cache-Control: no-store}):
 *
 * <ul>
 *   <li>200 {@code application/json}, a completed key: {@code
 *       {"state":"completed","status":201,"completedAt":"2026-12-02T05:40:00.123Z","expiresAt":"..."}}
 *       ({@code status} is the stored response's status, which a retry with the same request
 *       replays; times are RFC 3339 UTC on the store's clock; {@code completedAt} is left out when the
 *       store did not record it).
 *   <li>200 {@code application/json}, a key in progress: {@code
 *       {"state":"in_progress","leaseUntil":"...","retryAfterSeconds":1}}, with {@code "step"} when
 *       the operation is in a named step; {@code retryAfterSeconds} is the wait hint of a 409 ({@link
 *       IdempotencyFilterConfig#retryAfterSeconds}).
 *   <li>404 problem details {@value #NOT_FOUND}, in the filter's problem format: an
 *       unknown key, an expired or released one, another principal's key, or an {@code operation}
 *       that names no configured route. The answer is the same bytes in every case (nothing in it
 *       depends on the key, the principal or why), so that they cannot be told apart (RFC 9110
 *       section 15.5.5 allows 404 to hide a resource's existence).
 *   <li>400 {@value IdemProblems#KEY_MALFORMED}: the key segment is not a valid key (the {@link
 *       IdempotencyKey} grammar: 1 to 255 characters 0x20 to 0x7E, percent-encoded in the path as
 *       RFC 3986 section 2.1 says; containers refuse some encodings themselves, with their own 400,
 *       before any filter runs: Jetty and Tomcat refuse an encoded {@code /} ({@code %2F}) and
 *       {@code %00} by default, so a key with a {@code /} cannot be asked about on them); 400
 *       {@value #OPERATION_MISSING}: no {@code operation}
 *       parameter, or more than one.
 *   <li>405 {@value #METHOD_NOT_ALLOWED} with {@code Allow: GET}: another method on the path.
 *   <li>503 {@value IdemProblems#STORE_UNAVAILABLE}: the store failed ({@link IdemStoreException});
 *       500 {@value IdemProblems#STORED_RESPONSE_UNREADABLE}: the key is completed but its
 *       protected response cannot be opened to read its status.
 * </ul>
 *
 * <p>Requests to other paths pass through. Thread-safe: the configuration is immutable.
 */
public final class KeyStatusEndpoint implements Filter {

  /** The default path of the endpoint inside the context: {@value}. */
  public static final String DEFAULT_PATH = "/idempotency-keys";

  /** The problem name of the 404 answer: {@value}. */
  public static final String NOT_FOUND = "idempotency-key-not-found";

  /** The problem name of a request without one {@code operation} parameter (400): {@value}. */
  public static final String OPERATION_MISSING = "operation-missing";

  /** The problem name of a method other than GET on the endpoint's path (405): {@value}. */
  public static final String METHOD_NOT_ALLOWED = "method-not-allowed";

  private static final Pattern PATH = Pattern.compile("(/[A-Za-z0-9._~-]+)+");

  private final IdempotencyFilterConfig config;
  private final KeyStatusReader reader;
  private final @Nullable OtherOperations others;
  private final String path;
  private final IdemProblem notFound;

  /**
   * An endpoint on {@link #DEFAULT_PATH}.
   *
   * @param config the filter's configuration: routes, principal resolver, anonymous principal,
   *     problem format; never {@code null}
   * @param reader the store the filter's engine uses, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException if a configured route lies under {@link #DEFAULT_PATH}
   */
  public KeyStatusEndpoint(IdempotencyFilterConfig config, KeyStatusReader reader) {
    this(config, reader, DEFAULT_PATH);
  }

  /**
   * @param config the filter's configuration, never {@code null}
   * @param reader the store the filter's engine uses, never {@code null}
   * @param path the endpoint's path inside the context: {@code /} and segments of RFC 3986
   *     unreserved characters, without a trailing {@code /} (such as {@code /idempotency-keys})
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException if {@code path} breaks that rule, or a configured route's
   *     pattern is {@code path} or lies under it (the endpoint would answer that route's requests)
   */
  public KeyStatusEndpoint(IdempotencyFilterConfig config, KeyStatusReader reader, String path) {
    this(config, reader, path, null);
  }

  /**
   * Keys recorded under operations that are not the filter's routes: the Spring starter's {@code
   * @Idempotent} methods ({@code operation=charge}). Asked only for an operation that names no
   * route.
   */
  @FunctionalInterface
  public interface OtherOperations {
    /**
     * @param request the status request, for the caller's principal, never {@code null}
     * @param operation the operation parameter as given, never {@code null}
     * @param key the key, never {@code null}
     * @return the caller's key's status under that operation, or {@code null} when the operation is
     *     not one of these (then 404 like any unknown operation)
     * @throws IdemStoreException if the store fails (answered 503)
     */
    @Nullable KeyStatus status(HttpServletRequest request, String operation, IdempotencyKey key);
  }

  /**
   * @param config the filter's configuration, never {@code null}
   * @param reader the store the filter's engine uses, never {@code null}
   * @param path the endpoint's path inside the context, as for {@link #KeyStatusEndpoint(IdempotencyFilterConfig,
   *     KeyStatusReader, String)}
   * @param others the keys of operations that are not routes, or {@code null} for none
   * @throws NullPointerException if {@code config}, {@code reader} or {@code path} is {@code null}
   * @throws IllegalArgumentException as {@link #KeyStatusEndpoint(IdempotencyFilterConfig, KeyStatusReader, String)}
   */
  public KeyStatusEndpoint(IdempotencyFilterConfig config, KeyStatusReader reader, String path, @Nullable OtherOperations others) {
    this.others = others;
    this.config = Objects.requireNonNull(config, "config");
    this.reader = Objects.requireNonNull(reader, "reader");
    Objects.requireNonNull(path, "path");
    if (!PATH.matcher(path).matches()) {
      throw new IllegalArgumentException("path must be '/' and segments of letters, digits, '.', '_', '~' or '-', without a"
          + " trailing '/', such as /idempotency-keys; was " + path);
    }
    for (IdempotencyFilterConfig.Route r : config.routes()) {
      if (r.pattern().equals(path) || r.pattern().startsWith(path + "/")) {
        throw new IllegalArgumentException("the route " + r.operation() + " lies under the key status endpoint's path " + path
            + ", which would answer its requests: mount the endpoint on another path");
      }
    }
    this.path = path;
    this.notFound = config.problem(NOT_FOUND, "Idempotency-Key not found", 404,
        "no request of yours with this Idempotency-Key is recorded for this operation (never sent, not completed and"
            + " released, or expired): a request sent again with this key runs as a new one", Map.of("state", "not_found"));
  }

  /** @return the endpoint's path inside the context, never {@code null} */
  public String path() {
    return path;
  }

  /**
   * Answers a request to {@code <path>/<key>} as the class describes; passes any other through.
   *
   * @throws IOException if writing the answer fails
   * @throws ServletException from the rest of the chain, for other paths
   * @throws RuntimeException an unchecked exception of the {@link dev.idem.core.spi.PrincipalResolver}, or of the
   *     reader other than {@link IdemStoreException} and {@link StoredResponseUnreadableException}
   */
  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
    if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)) {
      chain.doFilter(request, response);
      return;
    }
    String rawKey = rawKeySegment(req);
    if (rawKey == null) {
      chain.doFilter(request, response);
      return;
    }
    res.setHeader("Cache-Control", "no-store");
    RequestReader.dropUnreadBody(req, res); // the endpoint never reads a body; one sent must not stay on the connection
    if (!"GET".equals(req.getMethod())) {
      res.setHeader("Allow", "GET");
      config.problems().send(config.problem(METHOD_NOT_ALLOWED, "Method not allowed", 405,
          "the idempotency key status endpoint answers GET only", Map.of()), res);
      return;
    }
    IdempotencyKey key;
    try {
      key = IdempotencyKey.of(percentDecode(rawKey));
    } catch (InvalidIdempotencyKeyException | IllegalArgumentException e) {
      config.problems().send(config.problems().keyMalformed("the key in the path is not a valid idempotency key: 1 to 255"
          + " characters from 0x20 to 0x7E, percent-encoded where RFC 3986 requires it"), res);
      return;
    }
    String[] operations = req.getParameterValues("operation");
    if (operations == null || operations.length != 1 || operations[0].isEmpty()) {
      config.problems().send(config.problem(OPERATION_MISSING, "The operation is missing", 400,
          "name the operation the key was sent to as one query parameter operation=<METHOD pattern>, such as"
              + " operation=POST%20%2Fnotes, the route as the server configures it", Map.of()), res);
      return;
    }
    Target target = routeOf(operations[0], req.getContextPath());
    KeyStatus status;
    try {
      status = target == null ? otherStatus(req, operations[0], key) : routeStatus(req, target, key);
    } catch (StoredResponseUnreadableException e) {
      config.problems().send(config.problems().storedResponseUnreadable(), res);
      return;
    } catch (IdemStoreException e) {
      config.problems().send(config.problems().storeUnavailable(), res);
      return;
    }
    answer(status, res);
  }

  /** The status under an operation that is no route: {@link OtherOperations}', else absent (no key can be recorded there). */
  private KeyStatus otherStatus(HttpServletRequest req, String operation, IdempotencyKey key) {
    KeyStatus other = others == null ? null : others.status(req, operation, key);
    return other == null ? KeyStatus.absent() : other;
  }

  /**
   * The status under a route, named as the filter names it: after the handler the request line
   * reaches when the configuration names operations so, then, as the filter looks, under the
   * operations of the routes that match it for a key stored before operations were named after
   * handlers ({@link Operations#earlierRecord}).
   */
  private KeyStatus routeStatus(HttpServletRequest req, Target target, IdempotencyKey key) {
    IdempotencyFilterConfig.Route route = target.route();
    String principal = Scope.principalPart(config.principalResolver().resolve(req), config.anonymousPrincipal());
    String operation = Operations.operation(config, route.method(), target.path(), req.getContextPath(), route);
    KeyStatus status = route.statusReader().orElse(reader).status(Scope.of(principal, operation), key);
    if (status instanceof KeyStatus.Absent) {
      Operations.Earlier earlier = Operations.earlierRecord(config, route.method(), target.path(),
          req.getContextPath(), principal, key, operation);
      if (earlier != null) {
        return earlier.status();
      }
    }
    return status;
  }

  /** The status as JSON, or the 404 problem for an absent key. */
  private void answer(KeyStatus status, HttpServletResponse res) throws IOException {
    if (status instanceof KeyStatus.Completed completed) {
      StringBuilder json = new StringBuilder(128).append("{\"state\":\"completed\",\"status\":").append(completed.status());
      if (completed.completedAt() != null) {
        json.append(",\"completedAt\":\"").append(completed.completedAt()).append('"');
      }
      json.append(",\"expiresAt\":\"").append(completed.expiresAt()).append("\"}");
      sendJson(res, json);
    } else if (status instanceof KeyStatus.InProgress running) {
      StringBuilder json = new StringBuilder(128).append("{\"state\":\"in_progress\",\"leaseUntil\":\"")
          .append(running.leaseUntil()).append("\",\"retryAfterSeconds\":").append(config.retryAfterSeconds(running.leaseRemaining()));
      if (running.step() != null) {
        json.append(",\"step\":");
        quote(json, running.step());
      }
      sendJson(res, json.append('}'));
    } else {
      sendNotFound(res);
    }
  }

  /**
   * @param context the request's context path ({@code ""} at the root, such as {@code "/shop"})
   * @return the configured route named by {@code operation}: the one whose {@code "<METHOD>
   *     <pattern>"} is {@code operation}, or whose scope operation under this context is (such as
   *     {@code "POST /shop/notes"} for the route {@code POST /notes}); else, for a request line such
   *     as {@code "POST /orders/7"} or {@code "POST /shop/orders/7"} (the path as the client sent
   *     it, with or without the context path), the route the filter would match for that method and
   *     path, so a client that names its request, not the route's pattern, still reads the key in
   *     the scope the filter gave it; {@code null} when none
   */
  /**
   * The route an operation parameter names, and the path inside the context to name the operation
   * by: a request line's or a handler template's ({@code POST /notes/7}, {@code POST /notes/{id}}),
   * or the route's own pattern.
   */
  private record Target(IdempotencyFilterConfig.Route route, String path) {}

  private @Nullable Target routeOf(String operation, @Nullable String context) {
    // the context path, or null for the root context
    String ctx = context == null || context.isEmpty() || context.equals("/") ? null : context;
    for (IdempotencyFilterConfig.Route r : config.routes()) {
      if (r.operation().equals(operation) || (ctx != null && operation.equals(r.method() + " " + ctx + r.pattern()))) {
        // a route's own operation: named as the filter names it, after the handler its pattern reaches if any
        return new Target(r, r.pattern());
      }
    }
    int space = operation.indexOf(' ');
    if (space <= 0 || space + 1 >= operation.length() || operation.charAt(space + 1) != '/') {
      return null;
    }
    String method = operation.substring(0, space);
    String path = operation.substring(space + 1);
    if (ctx != null && path.startsWith(ctx + "/")) {
      String inside = path.substring(ctx.length());
      IdempotencyFilterConfig.Route r = config.routeFor(method, inside);
      if (r != null) {
        return new Target(r, inside);
      }
    }
    IdempotencyFilterConfig.Route r = config.routeFor(method, path);
    return r == null ? null : new Target(r, path);
  }

  private void sendNotFound(HttpServletResponse res) throws IOException {
    config.problems().send(notFound, res);
  }

  private static void sendJson(HttpServletResponse res, CharSequence json) throws IOException {
    byte[] body = json.toString().getBytes(StandardCharsets.UTF_8);
    res.setStatus(200);
    res.setContentType("application/json");
    res.setContentLength(body.length);
    res.getOutputStream().write(body);
  }

  /**
   * @return the raw (still percent-encoded) path after {@code <path>/}, or {@code null} when the
   *     request is not for this endpoint (another path, or nothing after the slash)
   */
  private @Nullable String rawKeySegment(HttpServletRequest req) {
    String uri = req.getRequestURI();
    String context = req.getContextPath();
    if (uri == null) {
      return null;
    }
    String inContext = context != null && !context.isEmpty() && uri.startsWith(context) ? uri.substring(context.length()) : uri;
    String prefix = path + "/";
    if (!inContext.startsWith(prefix) || inContext.length() == prefix.length()) {
      return null;
    }
    return inContext.substring(prefix.length());
  }

  /**
   * Decodes RFC 3986 percent-encoding (UTF-8 bytes; {@code +} stays {@code +}).
   *
   * @throws IllegalArgumentException if a {@code %} is not followed by two hex digits, or the
   *     bytes are not UTF-8 ({@link IdempotencyKey} refuses non-ASCII anyway)
   */
  static String percentDecode(String raw) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c == '%') {
        if (i + 2 >= raw.length()) {
          throw new IllegalArgumentException("truncated percent-encoding");
        }
        int hi = Character.digit(raw.charAt(i + 1), 16);
        int lo = Character.digit(raw.charAt(i + 2), 16);
        if (hi < 0 || lo < 0) {
          throw new IllegalArgumentException("bad percent-encoding");
        }
        bytes.write(hi * 16 + lo);
        i += 2;
      } else if (c > 0x7F) {
        throw new IllegalArgumentException("a character outside ASCII");
      } else {
        bytes.write(c);
      }
    }
    byte[] decoded = bytes.toByteArray();
    for (byte b : decoded) {
      if (b < 0) {
        throw new IllegalArgumentException("a byte outside ASCII");
      }
    }
    return new String(decoded, StandardCharsets.US_ASCII);
  }

  private static void quote(StringBuilder json, String s) {
    json.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        json.append('\\').append(c);
      } else if (c < 0x20) {
        json.append(String.format("\\u%04x", (int) c));
      } else {
        json.append(c);
      }
    }
    json.append('"');
  }
}
