package dev.idem.servlet;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.core.http.HeaderRules;
import dev.idem.core.http.ProblemCatalog;
import dev.idem.core.http.ProblemDetails;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
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
  private final PrincipalResolver<? super HttpServletRequest> principalResolver;
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
    return new IdemProblem(name, type, type == null ? ProblemDetails.reasonPhrase(status) : title, status, detail, extensions);
  }

  /** @return who a request's key belongs to, called with the request; never {@code null} */
  public PrincipalResolver<? super HttpServletRequest> principalResolver() {
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
    return ProblemCatalog.retryAfterSeconds(leaseRemaining, maxRetryAfter);
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
  public static final class Route extends AbstractRoute {

    Route(String method, String pattern, KeyRequirement requirement) {
      super(method, pattern, requirement);
    }

    Route(AbstractRoute route, IdempotencyEngine engine, @Nullable KeyStatusReader statusReader, String policy,
        @Nullable Duration retention) {
      super(route, engine, statusReader, policy, retention);
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
  }

  /**
   * Builds an {@link IdempotencyFilterConfig}. Every method checks its argument at once and throws
   * on a bad one, so a broken configuration fails at startup, not on a request. Not thread-safe.
   */
  public static final class Builder extends AbstractConfigBuilder {

    private Builder(IdempotencyEngine engine) {
      super(engine);
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
