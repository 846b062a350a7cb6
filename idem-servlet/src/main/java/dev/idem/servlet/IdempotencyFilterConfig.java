package dev.idem.servlet;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;
import dev.idem.servlet.internal.HeaderRules;
import dev.idem.servlet.internal.PathPattern;
import dev.idem.servlet.internal.Problem;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;

/**
 * What {@link IdempotencyFilter} does: which requests it deduplicates (routes), with which engine,
 * how large a request body and a response it buffers, whose key a request uses, which response
 * header fields a replay carries, and which problem type URIs its own errors name.
 *
 * <p>Built by {@link #builder(LeaseIdempotency)} or {@link #builder(LeaseStore)}; every builder
 * method validates its argument at once. Immutable and thread-safe; share one instance between any
 * number of filters and threads.
 *
 * <pre>{@code
 * IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(
 *         LeaseIdempotency.builder(JdbcLeaseStore.builder(dataSource).build()).build())
 *     .required("POST", "/payments")       // 400 without Idempotency-Key
 *     .optional("POST", "/notes/**")       // deduplicated only when the client sends a key
 *     .maxBodyBytes(256 * 1024)
 *     .maxResponseBytes(8 * 1024 * 1024)   // larger answers are sent once; a retry gets 422, not a second run
 *     .problemTypeBase(URI.create("https://api.example.com/problems/"))
 *     .build();
 * servletContext.addFilter("idem", new IdempotencyFilter(config)).addMappingForUrlPatterns(null, false, "/*");
 * }</pre>
 */
public final class IdempotencyFilterConfig {

  /** The default request body limit: 1 MiB (1 048 576 bytes). */
  public static final int DEFAULT_MAX_BODY_BYTES = 1 << 20;

  /** The largest request body limit a configuration accepts: 256 MiB, held in memory per request. */
  public static final int MAX_BODY_BYTES_LIMIT = 1 << 28;

  /**
   * The default response limit of {@link Builder#maxResponseBytes(int)}: 4 MiB (4 194 304 bytes).
   * Every store Idem ships keeps such a record with the default server settings; see {@link
   * Builder#maxResponseBytes(int)} for the stores' own limits.
   */
  public static final int DEFAULT_MAX_RESPONSE_BYTES = 1 << 22;

  /**
   * The largest response limit a configuration accepts: 64 MiB (67 108 864 bytes), held in memory
   * per request while its handler runs.
   */
  public static final int MAX_RESPONSE_BYTES_LIMIT = 1 << 26;

  /**
   * The default base of the problem type URIs of {@link Builder#problemTypeBase(URI)}: {@value
   * IdempotencyFilter#PROBLEM_TYPE_BASE}, so that the filter's problems carry the type URIs of the
   * {@code IdempotencyFilter.PROBLEM_*} constants.
   */
  public static final URI DEFAULT_PROBLEM_TYPE_BASE = URI.create(IdempotencyFilter.PROBLEM_TYPE_BASE);

  /**
   * The default cap of the {@code Retry-After} hint of a 409 "in progress" answer: 1 second (see
   * {@link Builder#maxRetryAfter(Duration)}).
   */
  public static final Duration DEFAULT_MAX_RETRY_AFTER = Duration.ofSeconds(1);

  /** The largest cap {@link Builder#maxRetryAfter(Duration)} accepts: 1 hour, the longest lease. */
  public static final Duration MAX_RETRY_AFTER_LIMIT = Duration.ofHours(1);

  /** The default principal of callers without one: {@code "anonymous"}. */
  public static final String DEFAULT_ANONYMOUS_PRINCIPAL = "anonymous";

  /**
   * The servlet context attribute that {@link IdempotencyFilter#IdempotencyFilter()} reads its
   * configuration from, for containers that instantiate filters themselves.
   */
  public static final String CONTEXT_ATTRIBUTE = IdempotencyFilterConfig.class.getName();

  /**
   * The response header fields a replay carries by default, beside the status and the body. Each
   * describes the stored representation or its relation to a resource, and is the same for every
   * repetition of the answer:
   *
   * <ul>
   *   <li>{@code Content-Type}, {@code Content-Encoding}, {@code Content-Language}: how to read the
   *       stored body bytes (RFC 9110 sections 8.3, 8.4, 8.5). {@code Content-Encoding} is needed
   *       whenever the handler itself compresses: replaying gzip bytes without it corrupts them.
   *   <li>{@code Location}: the URI of the resource a 201 created or a 3xx points to (RFC 9110
   *       section 10.2.2); a retry must learn the same resource.
   *   <li>{@code Content-Location}, {@code ETag}, {@code Last-Modified}: identity and validators
   *       of the representation in the body (RFC 9110 sections 8.7, 8.8.3, 8.8.2), so conditional
   *       requests that follow a replay behave as after the first answer.
   *   <li>{@code Cache-Control}, {@code Vary}: how caches may keep the answer (RFC 9111 section
   *       5.2, RFC 9110 section 12.5.5); a replay must not be cacheable where the original was not.
   *   <li>{@code Link}: typed links of the answer (RFC 8288), such as pagination or {@code
   *       describedby}.
   * </ul>
   *
   * <p>Per-transmission fields ({@code Date}, {@code Server}) are the container's, and are new on a
   * replay. Fields in {@link #NEVER_REPLAYED_HEADERS} are never stored.
   */
  public static final List<String> DEFAULT_REPLAYED_HEADERS = List.of(
      "Content-Type", "Content-Encoding", "Content-Language", "Location", "Content-Location",
      "ETag", "Last-Modified", "Cache-Control", "Vary", "Link");

  /**
   * Lower-case names of the response header fields that are never stored nor replayed, and that
   * {@link Builder#replayedHeaders(Collection)} refuses: credentials and session state ({@code
   * Set-Cookie}, {@code Set-Cookie2}, {@code Authorization}, {@code Proxy-Authorization}, {@code
   * WWW-Authenticate}, {@code Proxy-Authenticate}, {@code Authentication-Info}, {@code
   * Proxy-Authentication-Info}: they belong to one client's exchange, RFC 6265 and RFC 9110 section
   * 11), hop-by-hop and framing fields ({@code Connection}, {@code Keep-Alive}, {@code
   * Proxy-Connection}, {@code TE}, {@code Transfer-Encoding}, {@code Trailer}, {@code Upgrade}: RFC
   * 9110 section 7.6.1; {@code Content-Length}, recomputed from the stored body), and {@code
   * Idempotent-Replayed} and {@code Idempotency-Key}, which the filter adds itself. The first answer still carries every field
   * the handler set, cookies included; only what is stored for replays is filtered.
   */
  public static final Set<String> NEVER_REPLAYED_HEADERS = HeaderRules.NEVER_STORED;

  private final IdempotencyEngine engine;
  private final List<Route> routes;
  private final int maxBodyBytes;
  private final int maxResponseBytes;
  /** The base as given, or {@code null} for about:blank problems. */
  private final @Nullable URI problemTypeBase;
  private final IdemProblems problems;
  private final PrincipalResolver principalResolver;
  private final String anonymousPrincipal;
  private final Set<String> replayedHeaders;
  private final Duration maxRetryAfter;
  private final ProblemRenderer problemRenderer;
  private final IdemListener listener;
  private final @Nullable OperationNamer operationNamer;
  private final @Nullable KeyStatusReader earlierNames;

  private IdempotencyFilterConfig(Builder b, List<Route> routes) {
    this.engine = b.engine;
    this.routes = routes;
    this.maxBodyBytes = b.maxBodyBytes;
    this.maxResponseBytes = b.maxResponseBytes;
    this.problemTypeBase = b.problemTypeBase;
    this.principalResolver = b.principalResolver;
    this.anonymousPrincipal = b.anonymousPrincipal;
    TreeSet<String> headers = new TreeSet<>(String.CASE_INSENSITIVE_ORDER);
    headers.addAll(b.replayedHeaders);
    this.replayedHeaders = Collections.unmodifiableSet(headers);
    this.maxRetryAfter = b.maxRetryAfter;
    this.problemRenderer = b.problemRenderer;
    this.listener = b.listener;
    this.operationNamer = b.operationNamer;
    this.earlierNames = b.earlierNames;
    this.problems = new IdemProblems(this);
  }

  /**
   * @return Idem's problems under this configuration's type base and renderer: the mapping from
   *     an engine's result or exception to the answer that the filter and the Spring starter's
   *     {@code @Idempotent} exception resolver both send; never {@code null}
   */
  public IdemProblems problems() {
    return problems;
  }

  /**
   * @return what names a key's operation after the handler a request reaches ({@link
   *     Builder#operationNames}), or {@code null} to name it after the route
   */
  public @Nullable OperationNamer operationNamer() {
    return operationNamer;
  }

  /**
   * @return where the filter looks for a key stored under its route's operation (the name before
   *     {@link Builder#operationNames}) before it runs a request under the handler's, or {@code
   *     null} when it does not look
   */
  public @Nullable KeyStatusReader earlierNames() {
    return earlierNames;
  }

  /**
   * @return told of the requests the filter refuses before they reach the engine ({@link
   *     IdemListener#refused}); {@link IdemListener#NONE} unless set, never {@code null}
   */
  public IdemListener listener() {
    return listener;
  }

  /** @return what writes Idem's own answers ({@link ProblemRenderer#rfc9457()} unless set); never {@code null} */
  public ProblemRenderer problemRenderer() {
    return problemRenderer;
  }

  /**
   * Starts a configuration on an engine of either mode:
   *
   * <ul>
   *   <li>lease mode, a {@link LeaseIdempotency} whose lease, retention, {@link
   *       dev.idem.core.InProgressPolicy} and {@link dev.idem.core.ResponsePolicy} you chose. The
   *       in-progress policy decides whether a concurrent duplicate gets 409 at once (fail-fast, the
   *       default) or waits for the first answer;
   *   <li>transactional mode, idem-jdbc's {@code TransactionalIdempotency} on the handlers'
   *       DataSource (plain JDBC, or Spring's transactions through the Spring Boot starter): the
   *       claim, the handler's writes and the stored response commit in one transaction; a
   *       concurrent duplicate waits on the key's row and replays.
   * </ul>
   *
   * The engine's response policy decides which answers are stored (by default 5xx, 408, 425 and 429
   * are released, so a retry runs the handler again).
   *
   * @param engine the engine, never {@code null}
   * @return a builder with the defaults described on its methods; not thread-safe
   * @throws NullPointerException if {@code engine} is {@code null}
   */
  public static Builder builder(IdempotencyEngine engine) {
    return new Builder(Objects.requireNonNull(engine, "engine"));
  }

  /**
   * Starts a configuration on a store, with an engine of {@link LeaseIdempotency}'s defaults: lease
   * 30 s, retention 24 h, fail-fast, {@link dev.idem.core.ResponsePolicy#standard()}.
   *
   * @param store where claims and responses live, never {@code null}
   * @return a builder; not thread-safe
   * @throws NullPointerException if {@code store} is {@code null}
   */
  public static Builder builder(LeaseStore store) {
    return builder(LeaseIdempotency.builder(Objects.requireNonNull(store, "store")).build());
  }

  /** @return the engine requests run through unless their route has one of its own, never {@code null} */
  public IdempotencyEngine engine() {
    return engine;
  }

  /**
   * @param route one of this configuration's routes, never {@code null}
   * @return the engine the route's requests run through: its own ({@link Route#withEngine}), else
   *     {@link #engine()}; never {@code null}
   */
  public IdempotencyEngine engineFor(Route route) {
    return route.engine().orElse(engine);
  }

  /** @return the routes in the order they are tried, first match wins; unmodifiable, never empty */
  public List<Route> routes() {
    return routes;
  }

  /**
   * The first route that matches a request.
   *
   * @param method the request method, case-sensitive (RFC 9110 section 9.1), may be {@code null}
   * @param path the decoded path inside the context ({@code getServletPath() + getPathInfo()}), may
   *     be {@code null}
   * @return the route, or {@code null} when the filter lets the request pass untouched
   */
  public @Nullable Route routeFor(@Nullable String method, @Nullable String path) {
    for (Route r : routes) {
      if (r.matches(method, path)) {
        return r;
      }
    }
    return null;
  }

  /** @return the largest request body buffered, in bytes, 0 to {@value #MAX_BODY_BYTES_LIMIT} */
  public int maxBodyBytes() {
    return maxBodyBytes;
  }

  /**
   * @return the largest response body, in bytes, 0 to {@value #MAX_RESPONSE_BYTES_LIMIT}, that the
   *     filter holds in memory to store it; a longer one is streamed to the client, its key stays
   *     completed without the body, and a retry is refused (see {@link Builder#maxResponseBytes(int)})
   */
  public int maxResponseBytes() {
    return maxResponseBytes;
  }

  /**
   * The base that the filter's problem type URIs are resolved against (see {@link
   * Builder#problemTypeBase(URI)}).
   *
   * @return the base, an absolute URI ending in {@code /}; or empty when the filter's problems
   *     carry no {@code type} member, which RFC 9457 section 3.1.1 reads as {@code "about:blank"}
   *     ({@link Builder#aboutBlankProblemTypes()}). Never {@code null}.
   */
  public Optional<URI> problemTypeBase() {
    return Optional.ofNullable(problemTypeBase);
  }

  /**
   * The type URI of one of Idem's own problems, for the filter and for integrations that answer
   * Idem's exceptions in the same shape (the Spring Boot starter's {@code @Idempotent} methods).
   *
   * @param name the last segment, such as {@code "idempotency-key-missing"} (the part of an {@code
   *     IdempotencyFilter.PROBLEM_*} constant after {@link IdempotencyFilter#PROBLEM_TYPE_BASE});
   *     never {@code null}
   * @return the base followed by {@code name}, or {@code null} for about:blank problems (leave
   *     the {@code type} member out, RFC 9457 section 3.1.1)
   */
  public @Nullable String problemType(String name) {
    return problemTypeBase == null ? null : problemTypeBase + name;
  }

  /**
   * One of Idem's own problems as this configuration shapes it, for the filter and for
   * integrations that answer Idem's exceptions in the same shape (the Spring Boot starter's {@code
   * @Idempotent} methods): its type is {@link #problemType(String) problemType(name)} and its title
   * {@code title}; with about:blank problem types it has no type and the status code's reason
   * phrase as its title (RFC 9457 section 4.2.1), such as {@code "Conflict"} for 409. Stateless and
   * thread-safe.
   *
   * @param name the problem's name, such as {@code "request-in-progress"}; never {@code null}
   * @param title the problem type's title in English, used when problem types have a base; never
   *     {@code null}
   * @param status the HTTP status code, 400 to 599
   * @param detail the explanation of this occurrence in English, never {@code null}
   * @param extensions more members in order (see {@link IdemProblem}), never {@code null}, copied
   * @return the problem, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws IllegalArgumentException if {@code status} is not 400 to 599
   */
  public IdemProblem problem(String name, String title, int status, String detail, Map<String, Object> extensions) {
    Objects.requireNonNull(title, "title");
    String type = problemType(Objects.requireNonNull(name, "name"));
    return new IdemProblem(name, type, type == null ? Problem.reasonPhrase(status) : title, status, detail, extensions);
  }

  /** @return who a request's key belongs to; never {@code null} */
  public PrincipalResolver principalResolver() {
    return principalResolver;
  }

  /** @return the principal of callers that the resolver leaves anonymous; never {@code null} */
  public String anonymousPrincipal() {
    return anonymousPrincipal;
  }

  /**
   * @return the response header fields a replay carries; unmodifiable, never {@code null}. Its
   *     {@code contains} ignores case ({@code contains("etag")} is {@code true} by default).
   */
  public Set<String> replayedHeaders() {
    return replayedHeaders;
  }

  /**
   * @return the cap of the {@code Retry-After} hint of a 409 "in progress" answer, a whole number
   *     of seconds from 1 s to {@link #MAX_RETRY_AFTER_LIMIT}; never {@code null}
   */
  public Duration maxRetryAfter() {
    return maxRetryAfter;
  }

  /**
   * The {@code Retry-After} value (RFC 9110 section 10.2.3: a whole number of seconds) of a 409
   * "in progress" answer: the time left on the first attempt's lease, rounded up to whole seconds,
   * then bounded to at least 1 and at most {@link #maxRetryAfter()}. The lease is the longest the
   * client could have to wait (after it, the claim may be taken over), but the first attempt
   * usually finishes long before it ends, and asking again costs one read of the store; hence the
   * cap. The transactional engine waits on the key's row instead of answering 409, so this applies
   * to lease mode.
   *
   * @param leaseRemaining the rest of the first attempt's lease, as in {@link
   *     dev.idem.core.RequestInProgressException#retryAfter()}; {@code null} or negative counts as
   *     zero
   * @return seconds, from 1 to {@code maxRetryAfter().toSeconds()}
   */
  public long retryAfterSeconds(@Nullable Duration leaseRemaining) {
    long millis = leaseRemaining == null || leaseRemaining.isNegative() ? 0 : saturatedMillis(leaseRemaining);
    long seconds = millis / 1000 + (millis % 1000 == 0 ? 0 : 1);
    return Math.max(1, Math.min(seconds, maxRetryAfter.toSeconds()));
  }

  private static long saturatedMillis(Duration d) {
    try {
      return d.toMillis();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  @Override
  public String toString() {
    return "IdempotencyFilterConfig[routes=" + routes + ", maxBodyBytes=" + maxBodyBytes
        + ", maxResponseBytes=" + maxResponseBytes
        + ", problemTypeBase=" + (problemTypeBase == null ? "about:blank" : problemTypeBase)
        + ", anonymousPrincipal=" + anonymousPrincipal + ", replayedHeaders=" + replayedHeaders
        + ", maxRetryAfter=" + maxRetryAfter + "]";
  }

  /**
   * One deduplicated operation: a request method and a path pattern, and whether the key is
   * required. Its {@link #operation()}, {@code "<METHOD> <pattern>"} such as {@code "POST
   * /notes/**"}, is the operation part of every key's {@link Scope}: the route template, not the
   * raw URI, so that a key's scope is bounded and chosen by the server.
   *
   * <p>Path patterns: an exact path ({@code /notes}); {@code *} as a whole segment matches exactly
   * one non-empty segment ({@code /notes/*}); {@code **} as the last segment matches any number of
   * segments, none included ({@code /notes/**} matches {@code /notes}, {@code /notes/7} and {@code
   * /notes/7/tags}). Matching is case-sensitive, on the decoded path inside the context. Immutable
   * and thread-safe.
   */
  public static final class Route {
    private final String method;
    private final String pattern;
    private final KeyRequirement requirement;
    private final PathPattern compiled;
    private final @Nullable IdempotencyEngine engine;
    private final @Nullable KeyStatusReader statusReader;
    private final @Nullable String policy;
    private final @Nullable Duration retention;

    private Route(Route route, IdempotencyEngine engine, @Nullable KeyStatusReader statusReader, String policy,
        @Nullable Duration retention) {
      this.method = route.method;
      this.pattern = route.pattern;
      this.requirement = route.requirement;
      this.compiled = route.compiled;
      this.engine = Objects.requireNonNull(engine, "engine");
      this.statusReader = statusReader;
      this.policy = Objects.requireNonNull(policy, "policy");
      if (retention != null && (retention.isZero() || retention.isNegative())) {
        throw new IllegalArgumentException("retention must be positive: " + retention);
      }
      this.retention = retention;
    }

    private Route(String method, String pattern, KeyRequirement requirement) {
      this.engine = null;
      this.statusReader = null;
      this.policy = null;
      this.retention = null;
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(pattern, "pattern");
      this.requirement = Objects.requireNonNull(requirement, "requirement");
      if (!HeaderRules.isFieldName(method)) {
        throw new IllegalArgumentException("method must be an RFC 9110 token, such as POST: " + method);
      }
      this.compiled = PathPattern.compile(pattern);
      String operation = method + " " + pattern;
      if (operation.length() > Scope.MAX_PART_LENGTH) {
        throw new IllegalArgumentException("method and path pattern together must be at most "
            + (Scope.MAX_PART_LENGTH - 1) + " characters: " + operation);
      }
      this.method = method;
      this.pattern = pattern;
    }

    /**
     * @param method the request method, an RFC 9110 token, case-sensitive ({@code POST}, not
     *     {@code post}), never {@code null}
     * @param pattern a path pattern as described on the class, never {@code null}
     * @param requirement whether requests must carry the key, never {@code null}
     * @return the route
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if the method is not a token, the pattern is malformed, or
     *     the operation would be longer than 200 characters
     */
    public static Route of(String method, String pattern, KeyRequirement requirement) {
      return new Route(method, pattern, requirement);
    }

    /**
     * This route with an engine of its own: a policy per route (a mode, a store, a retention, an
     * in-progress answer), such as transactional mode for {@code POST /orders} beside lease mode on
     * Redis for {@code POST /payments}, whose handler calls a payment API and must not run inside a
     * database transaction. Routes without one use the configuration's engine.
     *
     * @param engine the engine this route's requests run through, never {@code null}
     * @param statusReader reads the statuses of this route's keys for {@link KeyStatusEndpoint}
     *     (the store the engine keeps them in), or {@code null} to read them with the endpoint's
     *     own reader
     * @param policy the policy in a few words for logs ({@code "lease mode, Redis, retention 48h"}),
     *     never {@code null}
     * @return a new route with the same method, pattern and requirement
     * @throws NullPointerException if {@code engine} or {@code policy} is {@code null}
     */
    public Route withEngine(IdempotencyEngine engine, @Nullable KeyStatusReader statusReader, String policy) {
      return new Route(this, engine, statusReader, policy, null);
    }

    /**
     * As {@link #withEngine(IdempotencyEngine, KeyStatusReader, String)}, with how long the
     * engine keeps a key, for what publishes the policy (the starter's OpenAPI description).
     *
     * @param engine the engine this route's requests run through, never {@code null}
     * @param statusReader as for {@link #withEngine(IdempotencyEngine, KeyStatusReader, String)}, or {@code null}
     * @param policy the policy in a few words for logs, never {@code null}
     * @param retention how long the engine keeps a key after its first request, positive, never {@code null}
     * @return a new route with the same method, pattern and requirement
     * @throws NullPointerException if {@code engine}, {@code policy} or {@code retention} is {@code null}
     * @throws IllegalArgumentException if {@code retention} is not positive
     */
    public Route withEngine(IdempotencyEngine engine, @Nullable KeyStatusReader statusReader, String policy,
        Duration retention) {
      return new Route(this, engine, statusReader, policy, Objects.requireNonNull(retention, "retention"));
    }

    /**
     * @return how long this route's own engine keeps a key, or empty when the route uses the
     *     configuration's engine or its retention was not given
     */
    public Optional<Duration> retention() {
      return Optional.ofNullable(retention);
    }

    /** @return the engine of this route's own policy, or empty when it uses the configuration's engine */
    public Optional<IdempotencyEngine> engine() {
      return Optional.ofNullable(engine);
    }

    /** @return the reader of this route's own store, or empty when the endpoint's reader applies */
    public Optional<KeyStatusReader> statusReader() {
      return Optional.ofNullable(statusReader);
    }

    /** @return this route's own policy in words, or empty when it uses the configuration's engine */
    public Optional<String> policy() {
      return Optional.ofNullable(policy);
    }

    /** @return the request method, never {@code null} */
    public String method() {
      return method;
    }

    /** @return the path pattern as given, never {@code null} */
    public String pattern() {
      return pattern;
    }

    /** @return whether requests must carry the key, never {@code null} */
    public KeyRequirement requirement() {
      return requirement;
    }

    /** @return {@code "<method> <pattern>"}, the scope's operation; never {@code null} */
    public String operation() {
      return method + " " + pattern;
    }

    /**
     * @param method the request method, may be {@code null} (no match)
     * @param path the decoded path inside the context, may be {@code null} (no match)
     * @return whether this route applies to the request
     */
    public boolean matches(@Nullable String method, @Nullable String path) {
      return this.method.equals(method) && compiled.matches(path);
    }

    @Override
    public boolean equals(@Nullable Object o) {
      return o instanceof Route r && r.method.equals(method) && r.pattern.equals(pattern)
          && r.requirement == requirement && r.engine == engine && r.statusReader == statusReader
          && Objects.equals(r.policy, policy);
    }

    @Override
    public int hashCode() {
      return Objects.hash(method, pattern, requirement, policy);
    }

    /** @return {@code "<method> <pattern> (<requirement>)"}, and the route's own policy if it has one */
    @Override
    public String toString() {
      return operation() + " (" + requirement.name().toLowerCase(Locale.ROOT) + (policy == null ? "" : "; " + policy) + ")";
    }
  }

  /**
   * Builds an {@link IdempotencyFilterConfig}. Every method checks its argument at once and throws
   * on a bad one, so a broken configuration fails at startup, not on a request. Not thread-safe.
   */
  public static final class Builder {
    private final IdempotencyEngine engine;
    private final List<Route> routes = new ArrayList<>();
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES;
    private @Nullable URI problemTypeBase = DEFAULT_PROBLEM_TYPE_BASE;
    private PrincipalResolver principalResolver = PrincipalResolver.userPrincipal();
    private String anonymousPrincipal = DEFAULT_ANONYMOUS_PRINCIPAL;
    private Set<String> replayedHeaders = new LinkedHashSet<>(DEFAULT_REPLAYED_HEADERS);
    private Duration maxRetryAfter = DEFAULT_MAX_RETRY_AFTER;
    private ProblemRenderer problemRenderer = ProblemRenderer.rfc9457();
    private IdemListener listener = IdemListener.NONE;
    private @Nullable OperationNamer operationNamer;
    private @Nullable KeyStatusReader earlierNames;

    private Builder(IdempotencyEngine engine) {
      this.engine = engine;
    }

    /**
     * Adds a route; routes are tried in the order added and the first match wins. Without any
     * route, {@link #build()} uses {@code POST /**} and {@code PATCH /**}, both {@link
     * KeyRequirement#OPTIONAL}: the draft's non-idempotent methods (section 1), deduplicated
     * whenever the client sends a key.
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
      return this;
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
     *     #MAX_BODY_BYTES_LIMIT}; default {@value #DEFAULT_MAX_BODY_BYTES} (1 MiB). A larger body
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
      return this;
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
     *     #MAX_RESPONSE_BYTES_LIMIT} (64 MiB); default {@value #DEFAULT_MAX_RESPONSE_BYTES} (4 MiB)
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
      return this;
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
     * <p>The default, {@link #DEFAULT_PROBLEM_TYPE_BASE} ({@value
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
      return this;
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
      return this;
    }

    /**
     * @param resolver who a request's key belongs to; default {@link
     *     PrincipalResolver#userPrincipal()}
     * @return this builder
     * @throws NullPointerException if {@code resolver} is {@code null}
     */
    public Builder principalResolver(PrincipalResolver resolver) {
      this.principalResolver = Objects.requireNonNull(resolver, "resolver");
      return this;
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
      return this;
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
      return this;
    }

    /**
     * Caps the {@code Retry-After} hint of a 409 "in progress" answer (see {@link
     * IdempotencyFilterConfig#retryAfterSeconds(Duration)}): the hint is the time left on the first
     * attempt's lease, at least 1 second and at most {@code max}. Raise it for handlers that take
     * several seconds, so that clients do not ask again before an answer can be there.
     *
     * @param max a whole number of seconds, from 1 s to {@link #MAX_RETRY_AFTER_LIMIT} (1 hour);
     *     default {@link #DEFAULT_MAX_RETRY_AFTER} (1 s)
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
      return this;
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
      return this;
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
      return this;
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
      return this;
    }

    /**
     * @return a new, immutable, thread-safe configuration
     */
    public IdempotencyFilterConfig build() {
      List<Route> list = new ArrayList<>(routes);
      if (list.isEmpty()) {
        list.add(Route.of("POST", "/**", KeyRequirement.OPTIONAL));
        list.add(Route.of("PATCH", "/**", KeyRequirement.OPTIONAL));
      }
      return new IdempotencyFilterConfig(this, List.copyOf(list));
    }
  }
}
