package dev.idem.servlet;

import static dev.idem.servlet.IdempotencyFilterConfig.DEFAULT_ANONYMOUS_PRINCIPAL;
import static dev.idem.servlet.IdempotencyFilterConfig.DEFAULT_MAX_BODY_BYTES;
import static dev.idem.servlet.IdempotencyFilterConfig.DEFAULT_MAX_RESPONSE_BYTES;
import static dev.idem.servlet.IdempotencyFilterConfig.DEFAULT_MAX_RETRY_AFTER;
import static dev.idem.servlet.IdempotencyFilterConfig.DEFAULT_PROBLEM_TYPE_BASE;
import static dev.idem.servlet.IdempotencyFilterConfig.DEFAULT_REPLAYED_HEADERS;
import static dev.idem.servlet.IdempotencyFilterConfig.MAX_BODY_BYTES_LIMIT;
import static dev.idem.servlet.IdempotencyFilterConfig.MAX_RESPONSE_BYTES_LIMIT;
import static dev.idem.servlet.IdempotencyFilterConfig.MAX_RETRY_AFTER_LIMIT;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Scope;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.servlet.IdempotencyFilterConfig.Builder;
import dev.idem.servlet.IdempotencyFilterConfig.Route;
import dev.idem.core.http.HeaderRules;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The body of {@link IdempotencyFilterConfig.Builder}: the settings it collects and the checks of
 * each. Package-private, so that the type applications name stays {@code
 * IdempotencyFilterConfig.Builder}, whose public methods these are; it lives in a file of its own
 * to keep the configuration's file readable. Not thread-safe.
 */
abstract sealed class AbstractConfigBuilder permits Builder {
  final IdempotencyEngine engine;
  final List<Route> routes = new ArrayList<>();
  int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
  int maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES;
  @Nullable URI problemTypeBase = DEFAULT_PROBLEM_TYPE_BASE;
  PrincipalResolver<? super HttpServletRequest> principalResolver = ServletPrincipals.userPrincipal();
  String anonymousPrincipal = DEFAULT_ANONYMOUS_PRINCIPAL;
  Set<String> replayedHeaders = new LinkedHashSet<>(DEFAULT_REPLAYED_HEADERS);
  Duration maxRetryAfter = DEFAULT_MAX_RETRY_AFTER;
  ProblemRenderer problemRenderer = ProblemRenderer.rfc9457();
  IdemListener listener = IdemListener.NONE;
  @Nullable OperationNamer operationNamer;
  @Nullable KeyStatusReader earlierNames;

  AbstractConfigBuilder(IdempotencyEngine engine) {
    this.engine = engine;
  }

  /**
   * Adds a route; routes are tried in the order added and the first match wins. Without any
   * route, {@link IdempotencyFilterConfig.Builder#build()} uses {@code POST /**} and {@code PATCH
   * /**}, both {@link KeyRequirement#OPTIONAL}: the draft's non-idempotent methods (section 1),
   * deduplicated whenever the client sends a key.
   *
   * @param method the request method, case-sensitive token, never {@code null}
   * @param pattern a path pattern (see {@link Route}), never {@code null}
   * @param requirement whether the key is required, never {@code null}
   * @return this builder
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException if {@link Route#of} refuses the arguments, or the same
   *     method and pattern were already added
   */
  public Builder route(String method, String pattern, KeyRequirement requirement) {
    return route(Route.of(method, pattern, requirement));
  }

  /**
   * Adds a route made by {@link Route#of}, with an engine of its own if {@link Route#withEngine}
   * gave it one; routes are tried in the order added and the first match wins.
   *
   * @param route the route, never {@code null}
   * @return this builder
   * @throws NullPointerException if {@code route} is {@code null}
   * @throws IllegalArgumentException if the same method and pattern were already added
   */
  public Builder route(Route route) {
    Objects.requireNonNull(route, "route");
    for (Route r : routes) {
      if (r.method().equals(route.method()) && r.pattern().equals(route.pattern())) {
        throw new IllegalArgumentException("route " + route.operation() + " was already added");
      }
    }
    routes.add(route);
    return self();
  }

  /**
   * Same as {@code route(method, pattern, KeyRequirement.REQUIRED)}.
   *
   * @param method the request method, case-sensitive token, never {@code null}
   * @param pattern a path pattern (see {@link Route}), never {@code null}
   * @return this builder
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException as {@link #route}
   */
  public Builder required(String method, String pattern) {
    return route(method, pattern, KeyRequirement.REQUIRED);
  }

  /**
   * Same as {@code route(method, pattern, KeyRequirement.OPTIONAL)}.
   *
   * @param method the request method, case-sensitive token, never {@code null}
   * @param pattern a path pattern (see {@link Route}), never {@code null}
   * @return this builder
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException as {@link #route}
   */
  public Builder optional(String method, String pattern) {
    return route(method, pattern, KeyRequirement.OPTIONAL);
  }

  /**
   * @param bytes the largest request body buffered and fingerprinted, in bytes, 0 to {@value
   *     #MAX_BODY_BYTES_LIMIT}; default {@value IdempotencyFilterConfig#DEFAULT_MAX_BODY_BYTES} (1 MiB). A larger body
   *     (announced by {@code Content-Length}, or counted while reading) gets 413.
   * @return this builder
   * @throws IllegalArgumentException if out of range
   */
  public Builder maxBodyBytes(int bytes) {
    if (bytes < 0 || bytes > MAX_BODY_BYTES_LIMIT) {
      throw new IllegalArgumentException(
          "maxBodyBytes must be between 0 and " + MAX_BODY_BYTES_LIMIT + ", was " + bytes);
    }
    this.maxBodyBytes = bytes;
    return self();
  }

  /**
   * Caps the response body the filter holds in memory in order to store it, the largest answer a
   * retry can get back. A deduplicated request's response is buffered while its handler runs, so
   * that it can be stored and so that nothing reaches the client before the handler returns; an
   * answer up to the limit is stored whole and replayed byte for byte.
   *
   * <p>When the body grows past this limit, the filter stops buffering: the status, header fields
   * and cookies and the bytes buffered so far are sent to the client, and the rest of the body
   * streams straight through (flushes included). The client still receives the whole answer; the
   * filter's memory stays bounded by the limit. The body is not stored, since the filter no longer
   * has it, but the operation ran, so its key is <em>not</em> freed: the engine completes the claim
   * with a record of the answer without its body (status, replayed header fields, body length;
   * {@link dev.idem.core.StoredResponse.Builder#bodyNotStored(long)}), or releases it when the
   * {@link dev.idem.core.ResponsePolicy} does not store that status (5xx by default), exactly as
   * for a short answer. A retry with the same key then runs nothing and gets 422 with the problem
   * type {@code response-too-large-to-replay} ({@link IdempotencyFilter#PROBLEM_RESPONSE_TOO_LARGE}
   * under the default base), whose {@code originalStatus}, {@code originalBodyBytes} and {@code
   * originalLocation} members say what the first answer was. The filter logs a warning (without
   * the key) for each such answer. Set the limit above the largest answer a route gives when its
   * retries must be replayed.
   *
   * <p>A body of exactly {@code bytes} bytes is still stored. The limit counts body bytes as the
   * handler writes them (after character encoding, before any transfer coding), not header
   * fields. {@code 0} stores only answers without a body.
   *
   * <p>The store must accept a record of this size plus the header fields: SQLite (BLOB, up to
   * about 1 GB by default), PostgreSQL ({@code bytea}, 1 GB) and Redis (a string, 512 MB) do, and
   * so does MySQL/MariaDB's {@code LONGBLOB} column, but there each statement must also fit the
   * server's {@code max_allowed_packet}, which the driver's text protocol may need twice the
   * body's size for (binary bytes are escaped): the default 4 MiB fits MariaDB's default of 16 MiB;
   * a larger limit needs a larger {@code max_allowed_packet}. A record the store refuses is a
   * store failure after the handler ran.
   *
   * @param bytes the largest response body stored, in bytes, 0 to {@value
   *     #MAX_RESPONSE_BYTES_LIMIT} (64 MiB); default {@value IdempotencyFilterConfig#DEFAULT_MAX_RESPONSE_BYTES} (4 MiB)
   * @return this builder
   * @throws IllegalArgumentException if {@code bytes} is negative or larger than {@value
   *     #MAX_RESPONSE_BYTES_LIMIT}
   */
  public Builder maxResponseBytes(int bytes) {
    if (bytes < 0 || bytes > MAX_RESPONSE_BYTES_LIMIT) {
      throw new IllegalArgumentException("maxResponseBytes must be between 0 and " + MAX_RESPONSE_BYTES_LIMIT
          + " (64 MiB), was " + bytes);
    }
    this.maxResponseBytes = bytes;
    return self();
  }

  /**
   * Sets the base of the {@code type} URIs of the RFC 9457 problem details the filter answers
   * with itself (400, 409, 413, 422, 503; see {@link IdempotencyFilter}). Each problem's type is
   * {@code base} followed by its name, for example {@code
   * https://api.example.com/problems/idempotency-key-missing} for the base {@code
   * https://api.example.com/problems/}. RFC 9457 section 3.1.1 makes the type URI the problem
   * type's primary identifier and recommends that, when it is a locator, dereferencing it gives
   * human-readable documentation: choose a base under a domain you control, and publish the
   * documentation there, or use {@link #aboutBlankProblemTypes()}.
   *
   * <p>The default, {@link IdempotencyFilterConfig#DEFAULT_PROBLEM_TYPE_BASE} ({@value
   * IdempotencyFilter#PROBLEM_TYPE_BASE}), gives the URIs of the {@code IdempotencyFilter.PROBLEM_*}
   * constants. Problem bodies a handler produces ({@code sendError}) are not affected.
   *
   * @param base an absolute URI (with a scheme, such as {@code https:}, {@code urn:} or {@code
   *     tag:}) that ends in {@code /} or, for a URI without a path hierarchy such as a URN, in
   *     {@code :}, and has neither a query nor a fragment, in US-ASCII (percent-encode anything
   *     else); never {@code null}: to omit the type, call {@link #aboutBlankProblemTypes()}
   * @return this builder
   * @throws NullPointerException if {@code base} is {@code null}
   * @throws IllegalArgumentException if {@code base} is relative, ends in neither {@code /} nor
   *     {@code :}, has a query or a fragment, or contains a character outside US-ASCII
   */
  public Builder problemTypeBase(URI base) {
    Objects.requireNonNull(base, "base (call aboutBlankProblemTypes() to leave the problem type out)");
    String text = base.toString();
    if (!base.isAbsolute()) {
      throw new IllegalArgumentException("problemTypeBase must be an absolute URI, with a scheme such as https:, was '" + text + "'");
    }
    if (base.getRawQuery() != null || base.getRawFragment() != null) {
      throw new IllegalArgumentException("problemTypeBase must have no query and no fragment, was '" + text + "'");
    }
    if (!text.endsWith("/") && !(base.isOpaque() && text.endsWith(":"))) {
      throw new IllegalArgumentException("problemTypeBase must end in '/' (or ':' for a URN), so that problem names can be appended, was '" + text + "'"
          + (text.equalsIgnoreCase("about:blank") ? "; to leave the problem type out, call aboutBlankProblemTypes()" : ""));
    }
    if (!text.equals(base.toASCIIString())) {
      throw new IllegalArgumentException("problemTypeBase must be US-ASCII (percent-encode other characters), was '" + text + "'");
    }
    this.problemTypeBase = base;
    return self();
  }

  /**
   * Leaves the {@code type} member out of the problem details the filter answers with itself. By
   * RFC 9457 section 3.1.1 an absent type means {@code "about:blank"}: the problem has no meaning
   * beyond its HTTP status code (section 4.2.1). As section 4.2.1 recommends for {@code
   * about:blank}, the {@code title} is then the status code's reason phrase (such as {@code "Bad
   * Request"} or {@code "Unprocessable Content"}); the {@code detail} member still explains the
   * occurrence. Clients can then tell the filter's problems apart only by status code. Undo with
   * {@link #problemTypeBase(URI)}.
   *
   * @return this builder
   */
  public Builder aboutBlankProblemTypes() {
    this.problemTypeBase = null;
    return self();
  }

  /**
   * @param resolver who a request's key belongs to, called with the request; default {@link
   *     ServletPrincipals#userPrincipal()}. A {@code PrincipalResolver<Object>} (one resolver for
   *     every stack) is accepted too.
   * @return this builder
   * @throws NullPointerException if {@code resolver} is {@code null}
   */
  public Builder principalResolver(PrincipalResolver<? super HttpServletRequest> resolver) {
    this.principalResolver = Objects.requireNonNull(resolver, "resolver");
    return self();
  }

  /**
   * @param principal the principal of callers the resolver leaves anonymous, default {@value
   *     #DEFAULT_ANONYMOUS_PRINCIPAL}. All anonymous callers share it, so one of them can replay
   *     another's answer by sending the same key: keys must be unguessable (a UUID, as the draft
   *     recommends in section 2.2). An authenticated caller whose name equals it gets a scope of
   *     its own (see {@link PrincipalResolver}).
   * @return this builder
   * @throws NullPointerException if {@code principal} is {@code null}
   * @throws IllegalArgumentException if it is not a valid {@link Scope} part (1 to 200
   *     characters, no control character) or starts with {@code "sha256:"}
   */
  public Builder anonymousPrincipal(String principal) {
    Objects.requireNonNull(principal, "principal");
    Scope.of(principal, "x"); // validates
    if (principal.startsWith("sha256:")) {
      throw new IllegalArgumentException("the anonymous principal must not start with 'sha256:', the prefix of hashed principals");
    }
    this.anonymousPrincipal = principal;
    return self();
  }

  /**
   * Replaces the response header fields a replay carries (compared ignoring case). Default {@link
   * #DEFAULT_REPLAYED_HEADERS}.
   *
   * @param names field names, never {@code null}; may be empty (a replay then carries status and
   *     body only, plus {@code Idempotent-Replayed: true})
   * @return this builder
   * @throws NullPointerException if {@code names} or an element is {@code null}
   * @throws IllegalArgumentException if a name is not an RFC 9110 field name, or is one of {@link
   *     #NEVER_REPLAYED_HEADERS}
   */
  public Builder replayedHeaders(Collection<String> names) {
    Objects.requireNonNull(names, "names");
    Set<String> copy = new LinkedHashSet<>();
    for (String n : names) {
      Objects.requireNonNull(n, "header name");
      if (!HeaderRules.isFieldName(n)) {
        throw new IllegalArgumentException("not an HTTP field name: '" + n + "'");
      }
      if (HeaderRules.neverStored(n)) {
        throw new IllegalArgumentException(
            n + " is never stored or replayed (credentials, session state, hop-by-hop or framing field, or a field the filter sets itself)");
      }
      copy.add(n);
    }
    this.replayedHeaders = copy;
    return self();
  }

  /**
   * Caps the {@code Retry-After} hint of a 409 "in progress" answer (see {@link
   * IdempotencyFilterConfig#retryAfterSeconds(Duration)}): the hint is the time left on the first
   * attempt's lease, at least 1 second and at most {@code max}. Raise it for handlers that take
   * several seconds, so that clients do not ask again before an answer can be there.
   *
   * @param max a whole number of seconds, from 1 s to {@link IdempotencyFilterConfig#MAX_RETRY_AFTER_LIMIT} (1 hour);
   *     default {@link IdempotencyFilterConfig#DEFAULT_MAX_RETRY_AFTER} (1 s)
   * @return this builder
   * @throws NullPointerException if {@code max} is {@code null}
   * @throws IllegalArgumentException if {@code max} is out of range or not whole seconds
   *     ({@code Retry-After} carries whole seconds, RFC 9110 section 10.2.3)
   */
  public Builder maxRetryAfter(Duration max) {
    Objects.requireNonNull(max, "max");
    if (max.compareTo(Duration.ofSeconds(1)) < 0 || max.compareTo(MAX_RETRY_AFTER_LIMIT) > 0 || max.getNano() != 0) {
      throw new IllegalArgumentException("maxRetryAfter must be a whole number of seconds from 1s to 1h, was " + max);
    }
    this.maxRetryAfter = max;
    return self();
  }

  /**
   * Writes Idem's own answers (its refusals and failures, never the handler's answers) in the
   * application's error format instead of RFC 9457 problem details.
   *
   * @param renderer the renderer, never {@code null}; {@link ProblemRenderer#rfc9457()} is the
   *     default
   * @return this builder
   * @throws NullPointerException if {@code renderer} is {@code null}
   */
  public Builder problemRenderer(ProblemRenderer renderer) {
    this.problemRenderer = Objects.requireNonNull(renderer, "renderer");
    return self();
  }

  /**
   * Tells a listener of the requests the filter refuses itself, before any engine sees them (a
   * missing or malformed key, a body that is invalid or too large), with the route's operation
   * and the reason; the engines tell their own listeners of everything else. Give it the
   * engines' listener so that one set of metrics counts both.
   *
   * @param listener the listener, never {@code null}; {@link IdemListener#NONE} is the default
   * @return this builder
   * @throws NullPointerException if {@code listener} is {@code null}
   */
  public Builder listener(IdemListener listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    return self();
  }

  /**
   * Names each key's operation after the handler the request reaches ({@code "POST
   * /orders/{id}"}) instead of the route that matched it ({@code "POST /**"}). Keys stored under
   * the route's operation before this was set would no longer be found, and their retries would
   * run again: with {@code earlierNames}, a keyed request first asks it whether its key lives
   * under the operation of a route that matches it, each such route in order whose name differs
   * from the handler's (the first route, and a catch-all that a route added with the change now
   * precedes), and if so is answered there by that route's engine (replayed, in progress, or
   * refused as reused), as before. Keep it until one retention has passed since the change; then
   * {@code null} spares those reads.
   *
   * @param namer names operations after handlers, never {@code null}
   * @param earlierNames reads the statuses of keys under the routes' operations in the store the
   *     route's engine uses (a route's own {@link Route#statusReader()} wins), or {@code null}
   *     not to look
   * @return this builder
   * @throws NullPointerException if {@code namer} is {@code null}
   */
  public Builder operationNames(OperationNamer namer, @Nullable KeyStatusReader earlierNames) {
    this.operationNamer = Objects.requireNonNull(namer, "namer");
    this.earlierNames = earlierNames;
    return self();
  }

  private Builder self() {
    return (Builder) this; // the only subclass
  }
}
