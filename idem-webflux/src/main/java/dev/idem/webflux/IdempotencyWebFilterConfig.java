package dev.idem.webflux;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.IdemListener;
import dev.idem.core.Scope;
import dev.idem.core.http.HeaderRules;
import dev.idem.core.http.PathPattern;
import dev.idem.core.http.ProblemCatalog;
import dev.idem.core.http.ProblemDetails;
import java.net.URI;
import java.security.Principal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The configuration of an {@link IdempotencyWebFilter}: the engine, the routes, the limits, the
 * header fields a replay carries, the problem types and the principal. The same settings, limits
 * and defaults as the servlet filter's {@code IdempotencyFilterConfig} (idem-servlet), so that an
 * application moved from one stack to the other keeps its answers. Immutable and thread-safe.
 *
 * <pre>{@code
 * IdempotencyWebFilterConfig config = IdempotencyWebFilterConfig.builder(
 *         AsyncLeaseIdempotency.builder(store).build())
 *     .requireKey("POST", "/payments")
 *     .optionalKey("PATCH", "/notes/*")
 *     .build();
 * }</pre>
 */
public final class IdempotencyWebFilterConfig {

  /** The default limit of a request body on a protected route: 1 MiB. */
  public static final int DEFAULT_MAX_BODY_BYTES = 1 << 20;
  /** The largest limit of a request body: 256 MiB. */
  public static final int MAX_BODY_BYTES_LIMIT = 1 << 28;
  /** The default limit of a response body held for storing: 4 MiB. */
  public static final int DEFAULT_MAX_RESPONSE_BYTES = 1 << 22;
  /** The largest limit of a response body held for storing: 64 MiB. */
  public static final int MAX_RESPONSE_BYTES_LIMIT = 1 << 26;
  /** The default base of the problem type URIs: {@code urn:idem:problem:}, as the servlet filter's. */
  public static final URI DEFAULT_PROBLEM_TYPE_BASE = URI.create("urn:idem:problem:");
  /** The default cap of the {@code Retry-After} of a 409 "in progress" answer: 1 second. */
  public static final Duration DEFAULT_MAX_RETRY_AFTER = Duration.ofSeconds(1);
  /** The largest cap of the {@code Retry-After} of a 409 "in progress" answer: 1 hour. */
  public static final Duration MAX_RETRY_AFTER_LIMIT = Duration.ofHours(1);
  /** The principal of callers without one. */
  public static final String DEFAULT_ANONYMOUS_PRINCIPAL = "anonymous";
  /**
   * The response header fields a replay carries by default, as the servlet filter's: how to read
   * the body ({@code Content-Type}, {@code Content-Encoding}, {@code Content-Language}), where the
   * resource is ({@code Location}, {@code Content-Location}), its validators ({@code ETag}, {@code
   * Last-Modified}), caching ({@code Cache-Control}, {@code Vary}) and {@code Link}.
   */
  public static final List<String> DEFAULT_REPLAYED_HEADERS = List.of(
      "Content-Type", "Content-Encoding", "Content-Language", "Location", "Content-Location",
      "ETag", "Last-Modified", "Cache-Control", "Vary", "Link");

  private final @Nullable AsyncLeaseIdempotency engine;
  private final @Nullable TransactionalEngine transactional;
  private final List<Route> routes;
  private final int maxBodyBytes;
  private final int maxResponseBytes;
  private final Set<String> replayedHeaders;
  private final Duration maxRetryAfter;
  private final @Nullable String problemTypeBase;
  private final Function<ServerWebExchange, Mono<String>> principals;
  private final String anonymousPrincipal;

  private IdempotencyWebFilterConfig(Builder b) {
    this.engine = b.engine;
    this.transactional = b.transactional;
    this.routes = b.routes.isEmpty()
        ? List.of(new Route("POST", "/**", false), new Route("PATCH", "/**", false))
        : List.copyOf(b.routes);
    this.maxBodyBytes = b.maxBodyBytes;
    this.maxResponseBytes = b.maxResponseBytes;
    TreeSet<String> headers = new TreeSet<>(String.CASE_INSENSITIVE_ORDER);
    headers.addAll(b.replayedHeaders);
    this.replayedHeaders = Collections.unmodifiableSet(headers);
    this.maxRetryAfter = b.maxRetryAfter;
    this.problemTypeBase = b.problemTypeBase == null ? null : b.problemTypeBase.toString();
    this.principals = b.principals;
    this.anonymousPrincipal = b.anonymousPrincipal;
  }

  /**
   * @param engine the non-blocking lease-mode engine every protected request runs through, never {@code null}
   * @return a builder with the defaults above and, unless routes are added, {@code POST /**} and
   *     {@code PATCH /**} with an optional key (the draft's non-idempotent methods, section 1)
   */
  public static Builder builder(AsyncLeaseIdempotency engine) {
    return new Builder(Objects.requireNonNull(engine, "engine"), null);
  }

  /**
   * Transactional mode: every protected request's handler runs in one transaction with its key's
   * record ({@link TransactionalEngine}).
   *
   * @param engine the transactional engine every protected request runs through, never {@code null}
   * @return a builder with the same defaults as {@link #builder(AsyncLeaseIdempotency)}
   */
  public static Builder builder(TransactionalEngine engine) {
    return new Builder(null, Objects.requireNonNull(engine, "engine"));
  }

  /** @return the lease-mode engine, or empty in transactional mode */
  public Optional<AsyncLeaseIdempotency> leaseEngine() {
    return Optional.ofNullable(engine);
  }

  /** @return the transactional engine, or empty in lease mode */
  public Optional<TransactionalEngine> transactionalEngine() {
    return Optional.ofNullable(transactional);
  }

  /** @return the engine's listener, which the filter tells of its refusals, never {@code null} */
  public IdemListener listener() {
    AsyncLeaseIdempotency lease = engine;
    if (lease != null) {
      return lease.listener();
    }
    return Objects.requireNonNull(transactional).listener();
  }

  /** @return the routes in the order they are tried, unmodifiable, never empty */
  public List<Route> routes() {
    return routes;
  }

  /**
   * @param method the request method
   * @param path the decoded path within the application
   * @return the first route that matches, or {@code null}
   */
  public @Nullable Route routeFor(String method, String path) {
    for (Route r : routes) {
      if (r.matches(method, path)) {
        return r;
      }
    }
    return null;
  }

  /** @return the most bytes of a request body on a protected route; a longer one gets 413 */
  public int maxBodyBytes() {
    return maxBodyBytes;
  }

  /** @return the most bytes of a response body held for storing; a longer answer streams through and is not stored */
  public int maxResponseBytes() {
    return maxResponseBytes;
  }

  /** @return the header fields a replay carries; {@code contains} ignores case; unmodifiable */
  public Set<String> replayedHeaders() {
    return replayedHeaders;
  }

  /** @return the cap of the {@code Retry-After} of a 409 "in progress" answer, whole seconds */
  public Duration maxRetryAfter() {
    return maxRetryAfter;
  }

  /**
   * The type URI of one of Idem's own problems as the filter answers it, for integrations that
   * describe those answers (the Spring Boot starter's OpenAPI document), as the servlet filter's
   * {@code IdempotencyFilterConfig.problemType}.
   *
   * @param name the problem's name, one of {@link ProblemCatalog}'s constants such as {@value
   *     ProblemCatalog#KEY_MISSING}; never {@code null}
   * @return the problem type base followed by {@code name}, or {@code null} with {@code about:blank}
   *     problem types ({@link Builder#aboutBlankProblemTypes()}), whose answers carry no {@code type}
   *     member (RFC 9457 section 3.1.1)
   * @throws NullPointerException if {@code name} is {@code null}
   */
  public @Nullable String problemType(String name) {
    Objects.requireNonNull(name, "name");
    return problemTypeBase == null ? null : problemTypeBase + name;
  }

  /**
   * @param entry one of Idem's problems, never {@code null}
   * @return its problem details under this configuration's type base, or {@code about:blank}
   */
  ProblemDetails details(ProblemCatalog.Entry entry) {
    return entry.details(problemTypeBase);
  }

  /**
   * @param exchange the request
   * @return the scope's principal part of the request's caller (see {@link Scope#principalPart}),
   *     never empty
   */
  Mono<String> principalOf(ServerWebExchange exchange) {
    return Mono.defer(() -> principals.apply(exchange))
        .map(name -> Scope.principalPart(name, anonymousPrincipal))
        .defaultIfEmpty(Scope.principalPart(null, anonymousPrincipal));
  }

  /**
   * A protected route: a method and a path pattern ({@link PathPattern}: exact, {@code *} for one
   * segment, a final {@code **}), whose key is required or optional. A key's scope is named after
   * its route, {@code "<METHOD> <pattern>"}, as with the servlet filter. Immutable.
   */
  public static final class Route {
    private final String method;
    private final String pattern;
    private final PathPattern compiled;
    private final boolean keyRequired;

    Route(String method, String pattern, boolean keyRequired) {
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(pattern, "pattern");
      if (!HeaderRules.isFieldName(method)) {
        throw new IllegalArgumentException("method must be an RFC 9110 token, such as POST: " + method);
      }
      this.compiled = PathPattern.compile(pattern);
      if ((method + " " + pattern).length() > Scope.MAX_PART_LENGTH) {
        throw new IllegalArgumentException("method and path pattern together must be at most "
            + (Scope.MAX_PART_LENGTH - 1) + " characters: " + method + " " + pattern);
      }
      this.method = method;
      this.pattern = pattern;
      this.keyRequired = keyRequired;
    }

    /** @return the method, case-sensitive */
    public String method() {
      return method;
    }

    /** @return the path pattern as given */
    public String pattern() {
      return pattern;
    }

    /** @return whether a request without a key gets 400 (else it runs unprotected) */
    public boolean keyRequired() {
      return keyRequired;
    }

    /** @return the operation its keys are scoped by: {@code "<METHOD> <pattern>"} */
    public String operation() {
      return method + " " + pattern;
    }

    /** @return whether a request with this method and decoded path is this route's */
    public boolean matches(String method, String path) {
      return this.method.equals(method) && compiled.matches(path);
    }

    @Override
    public String toString() {
      return operation() + (keyRequired ? " (key required)" : " (key optional)");
    }
  }

  /** Builds an {@link IdempotencyWebFilterConfig}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final @Nullable AsyncLeaseIdempotency engine;
    private final @Nullable TransactionalEngine transactional;
    private final List<Route> routes = new ArrayList<>();
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES;
    private Collection<String> replayedHeaders = DEFAULT_REPLAYED_HEADERS;
    private Duration maxRetryAfter = DEFAULT_MAX_RETRY_AFTER;
    private @Nullable URI problemTypeBase = DEFAULT_PROBLEM_TYPE_BASE;
    private Function<ServerWebExchange, Mono<String>> principals = exchange -> exchange.getPrincipal().map(Principal::getName);
    private String anonymousPrincipal = DEFAULT_ANONYMOUS_PRINCIPAL;

    private Builder(@Nullable AsyncLeaseIdempotency engine, @Nullable TransactionalEngine transactional) {
      this.engine = engine;
      this.transactional = transactional;
    }

    /**
     * Adds a route whose requests without a key get 400 (draft section 2.7); routes are tried in
     * the order added and the first match wins.
     *
     * @param method the request method, an RFC 9110 token such as {@code POST}
     * @param pattern a path pattern ({@link PathPattern})
     * @return this builder
     * @throws IllegalArgumentException if the method or pattern is invalid, or the pair was already added
     */
    public Builder requireKey(String method, String pattern) {
      return add(new Route(method, pattern, true));
    }

    /**
     * Adds a route whose requests without a key run unprotected, and with one at most once.
     *
     * @param method the request method, an RFC 9110 token such as {@code POST}
     * @param pattern a path pattern ({@link PathPattern})
     * @return this builder
     * @throws IllegalArgumentException if the method or pattern is invalid, or the pair was already added
     */
    public Builder optionalKey(String method, String pattern) {
      return add(new Route(method, pattern, false));
    }

    private Builder add(Route route) {
      for (Route r : routes) {
        if (r.operation().equals(route.operation())) {
          throw new IllegalArgumentException("route " + route.operation() + " is already added");
        }
      }
      routes.add(route);
      return this;
    }

    /**
     * @param bytes the most bytes of a request body on a protected route, 0 to {@link #MAX_BODY_BYTES_LIMIT}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxBodyBytes(int bytes) {
      if (bytes < 0 || bytes > MAX_BODY_BYTES_LIMIT) {
        throw new IllegalArgumentException("maxBodyBytes must be 0 to " + MAX_BODY_BYTES_LIMIT + ", was " + bytes);
      }
      this.maxBodyBytes = bytes;
      return this;
    }

    /**
     * @param bytes the most bytes of a response body held for storing, 0 to {@link #MAX_RESPONSE_BYTES_LIMIT}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxResponseBytes(int bytes) {
      if (bytes < 0 || bytes > MAX_RESPONSE_BYTES_LIMIT) {
        throw new IllegalArgumentException("maxResponseBytes must be 0 to " + MAX_RESPONSE_BYTES_LIMIT + ", was " + bytes);
      }
      this.maxResponseBytes = bytes;
      return this;
    }

    /**
     * @param names the response header fields a replay carries, replacing the default; field names
     *     (RFC 9110 section 5.1), none of {@link HeaderRules#NEVER_STORED}
     * @return this builder
     * @throws IllegalArgumentException if a name is not a field name or is never stored
     */
    public Builder replayedHeaders(Collection<String> names) {
      List<String> copy = new ArrayList<>();
      for (String n : Objects.requireNonNull(names, "names")) {
        if (!HeaderRules.isFieldName(n)) {
          throw new IllegalArgumentException("not a header field name: " + n);
        }
        if (HeaderRules.neverStored(n)) {
          throw new IllegalArgumentException(n.toLowerCase(Locale.ROOT) + " is never stored or replayed");
        }
        copy.add(n);
      }
      this.replayedHeaders = copy;
      return this;
    }

    /**
     * @param max the cap of the {@code Retry-After} of a 409 "in progress" answer: whole seconds,
     *     1 s to {@link #MAX_RETRY_AFTER_LIMIT}
     * @return this builder
     * @throws IllegalArgumentException if out of range or not whole seconds
     */
    public Builder maxRetryAfter(Duration max) {
      Objects.requireNonNull(max, "max");
      if (max.compareTo(Duration.ofSeconds(1)) < 0 || max.compareTo(MAX_RETRY_AFTER_LIMIT) > 0 || max.toMillis() % 1000 != 0) {
        throw new IllegalArgumentException("maxRetryAfter must be whole seconds from 1 s to 1 h, was " + max);
      }
      this.maxRetryAfter = max;
      return this;
    }

    /**
     * @param base the base of the problem type URIs, an absolute URI ending in {@code /} or {@code
     *     :} (each type is the base followed by the problem's name)
     * @return this builder
     * @throws IllegalArgumentException if the base is not absolute or does not end so
     */
    public Builder problemTypeBase(URI base) {
      Objects.requireNonNull(base, "base");
      String text = base.toString();
      if (!base.isAbsolute() || !(text.endsWith("/") || text.endsWith(":"))) {
        throw new IllegalArgumentException("problemTypeBase must be absolute and end with '/' or ':': " + base);
      }
      this.problemTypeBase = base;
      return this;
    }

    /**
     * Leaves the {@code type} member out of every problem (RFC 9457 section 3.1.1: {@code
     * about:blank}), with the status code's reason phrase as {@code title}.
     *
     * @return this builder
     */
    public Builder aboutBlankProblemTypes() {
      this.problemTypeBase = null;
      return this;
    }

    /**
     * @param principals the name of a request's caller, without blocking (an empty Mono for an
     *     anonymous caller); default the exchange's {@link ServerWebExchange#getPrincipal()} name
     * @return this builder
     */
    public Builder principals(Function<ServerWebExchange, Mono<String>> principals) {
      this.principals = Objects.requireNonNull(principals, "principals");
      return this;
    }

    /**
     * @param principal the principal of callers without one, never {@code null} or blank
     * @return this builder
     * @throws IllegalArgumentException if blank
     */
    public Builder anonymousPrincipal(String principal) {
      if (Objects.requireNonNull(principal, "principal").isBlank()) {
        throw new IllegalArgumentException("anonymousPrincipal must not be blank");
      }
      this.anonymousPrincipal = principal;
      return this;
    }

    /** @return a new, immutable configuration */
    public IdempotencyWebFilterConfig build() {
      return new IdempotencyWebFilterConfig(this);
    }
  }
}
