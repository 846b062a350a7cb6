package dev.idem.spring;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * The {@code idem.*} properties. Bound once at start-up; the beans built from them validate every
 * value and stop the application with a clear message when one is wrong.
 */
@ConfigurationProperties(prefix = "idem")
public class IdemProperties {

  /** Whether Idem is configured at all. */
  private boolean enabled = true;

  /**
   * Which store keeps keys and stored responses: auto (Redis when idem-redis is on the class path
   * and the application has a Jedis UnifiedJedis bean or Spring Data Redis's RedisConnectionFactory,
   * else the DataSource, else memory with a warning), jdbc, redis (the UnifiedJedis bean if there is
   * one, else the RedisConnectionFactory configured by spring.data.redis.*; with neither the
   * application does not start), memory, or r2dbc (WebFlux only, with idem-r2dbc: the key table in
   * the R2DBC ConnectionFactory's database, without blocking; auto chooses it too in a WebFlux
   * application with idem-r2dbc and a ConnectionFactory).
   */
  private StoreType store = StoreType.AUTO;

  /**
   * How the HTTP filter runs a handler: auto (the default: transactional when the application has
   * one DataSource and a transaction manager that manages it, JDBC or JPA, and idem.store is auto or
   * jdbc, or, on WebFlux, an R2DBC ConnectionFactory with idem-r2dbc and idem.store auto or r2dbc;
   * lease otherwise), transactional (the claim, the handler's writes to the application's
   * DataSource, or its R2DBC ConnectionFactory on WebFlux, and the stored response commit in one
   * transaction; a duplicate is answered 409
   * while the first attempt runs, or waits for it up to idem.max-wait with idem.in-progress=wait) or lease
   * (the claim commits first; for handlers whose effects are outside the database, such as a
   * payment API). The chosen mode is logged once at start-up.
   */
  private Mode mode = Mode.AUTO;

  /** The key table for the jdbc store and for @Idempotent in transactional mode. */
  private String table = "idem_keys";

  /** Whether to create the key table at start-up when the keys are kept in the DataSource (CREATE TABLE IF NOT EXISTS, safe from many replicas at once); false when migrations do. */
  private boolean createSchema = true;

  /**
   * How long a completed key is remembered; after it, the same key is a new operation. The expiry
   * policy to publish (draft-ietf-httpapi-idempotency-key-header, section 2.3) is what each store
   * enforces: the jdbc store keeps a completed key at least this long after its completion and at
   * most 1 minute longer in transactional mode, at most the lease longer in lease mode (by the
   * database's clock); the redis store exactly this long (Redis's clock; an eviction policy other
   * than noeviction may drop keys sooner); the memory store exactly this long, until a restart.
   */
  private Duration retention = Duration.ofHours(24);

  /**
   * How long a claim is held before another attempt may take it over; longer than the slowest handler.
   * In transactional mode, where only @Idempotent methods called outside a transaction take a
   * lease, an unset lease that is not shorter than the retention becomes half the retention.
   */
  private Duration lease = Duration.ofSeconds(30);

  /**
   * What a duplicate does while the first request with its key runs: fail-fast (409 with
   * Retry-After at once, as the IETF Idempotency-Key draft recommends) or wait (up to idem.max-wait,
   * then the first request's answer, or 409). In both modes: in transactional mode on PostgreSQL and
   * MariaDB a waiting duplicate holds no connection and no transaction between its attempts; on
   * SQLite, whose one writer holds the whole database, it waits the busy timeout instead.
   */
    private InProgress inProgress = InProgress.FAIL_FAST;

  /**
   * Transactional mode: the order of the key's write in the handler's transaction. key-last runs
   * the handler, then inserts the key's row completed with its answer: one key statement per create
   * (the answer, if it streams past max-response-size, claims the key before its first byte). A
   * concurrent duplicate may run the handler too, but only one run commits: the other rolls back and
   * replays the winner's answer. claim-first inserts a claim before the handler and completes it
   * after: one statement more per create, and a duplicate never runs the handler.
   */
  private Strategy strategy = Strategy.KEY_LAST;

  /** With in-progress=wait: how long a duplicate waits for the first request before 409 (both modes). */
    private Duration maxWait = Duration.ofSeconds(5);

  /** The largest request body the filter buffers; a larger one gets 413. */
  private DataSize maxBodySize = DataSize.ofMegabytes(1);

  /**
   * The largest response body the filter holds in memory to store it, and the largest serialized
   * result of an @Idempotent method that is stored, 0B to 64MB (default 4MB). A longer response
   * still reaches the client in full, streamed, and runs once: its key stays completed with its
   * status but without its body, a warning is logged, and a retry with the same key gets 422
   * (problem type response-too-large-to-replay) instead of running the handler again. On
   * MySQL/MariaDB, max_allowed_packet must hold about twice this size.
   */
  private DataSize maxResponseSize = DataSize.ofMegabytes(4);

  /**
   * The base URI of the "type" member of the filter's RFC 9457 problem details: an absolute URI
   * ending in "/" (each problem appends its name, such as idempotency-key-missing), or about:blank to
   * leave the member out (RFC 9457 section 3.1.1).
   */
  private URI problemTypeBase = URI.create("urn:idem:problem:");

  /** Routes that require an Idempotency-Key, as "METHOD pattern", e.g. "POST /notes"; a missing key gets 400. */
  private List<String> requiredKeyRoutes = new ArrayList<>();

  /**
   * Routes where a key is optional, as "METHOD pattern" (default POST /** and PATCH /**); a request
   * with a key is deduplicated, one without runs normally. idem.required-key-routes are matched
   * first and leave this default in place for every other route.
   */
  private List<String> optionalKeyRoutes = new ArrayList<>(List.of("POST /**", "PATCH /**"));

  /**
   * Where the principal of a key's scope comes from when the application defines no principal
   * resolver bean (dev.idem.core.spi.PrincipalResolver of Object, for every stack; for the filter,
   * also one of HttpServletRequest; for gRPC, one of GrpcCall): auto (Spring Security's
   * authenticated user when Spring Security is on the class path; otherwise the
   * application does not start), spring-security, servlet (the servlet container's user,
   * HttpServletRequest.getUserPrincipal()), or shared (one scope for every caller: only for
   * single-tenant applications, where any caller may receive any other caller's stored answer).
   */
  private PrincipalSource principal = PrincipalSource.AUTO;

  /**
   * The principal of callers that are not authenticated. They all share its scope, so their keys
   * must be unguessable; an authenticated user of the same name gets a scope of its own.
   */
  private String anonymousPrincipal = "anonymous";

  /** The one principal of @Idempotent methods with idem.principal=shared. */
  private String methodPrincipal = "application";

  /**
   * The largest Retry-After, in whole seconds from 1s to 1h, of a 409 answered while the first
   * attempt runs: the hint is the time left on its lease, at least 1 second and at most this.
   */
  private Duration maxRetryAfter = Duration.ofSeconds(1);

  /** The Redis store. */
  private final Redis redis = new Redis();

  /**
   * What a key's operation is named after: handler (the Spring MVC handler's path pattern the
   * request reaches, POST /orders/{id}, where the route is POST /**; the route's pattern when no
   * handler matches) or route (the matching route's pattern, as before 0.2).
   */
  private OperationNames operationNames = OperationNames.HANDLER;

  /**
   * With operation-names=handler: whether a keyed request whose handler's name differs from its
   * route's first looks for its key under the route's name, so that a retry whose key was stored
   * before operations were named after handlers is replayed, not run again. It costs one read of the
   * store per such request: set it to false once one retention has passed since the upgrade (or on
   * a service that never stored keys under route names).
   */
  private boolean earlierOperationNames = true;

  /**
   * Routes with a policy of their own, by a name of your choice (idem.routes.payments.route=POST
   * /payments, idem.routes.payments.mode=lease, idem.routes.payments.store=redis): each has its own
   * mode, store, retention, lease and in-progress answer, unset ones taken from the idem.*
   * properties. They are tried before idem.required-key-routes and idem.optional-key-routes, the
   * most specific first (with the annotations' routes). An @IdempotencyPolicy annotation on a Spring MVC handler method does the same
   * beside the code.
   */
  private Map<String, RoutePolicy> routes = new LinkedHashMap<>();

  /**
   * Protection at rest of stored responses (idem.protection.*): off unless current-key is set. See
   * {@link dev.idem.core.ResponseProtection}.
   */
  private final Protection protection = new Protection();

  /** The transactional outbox (idem.outbox.*), with idem-outbox on the class path. */
  private final Outbox outbox = new Outbox();

  /** gRPC unary calls through Spring gRPC (idem.grpc.*), with idem-grpc on the class path. */
  private final Grpc grpc = new Grpc();

  /** The {@code idem.grpc.*} properties. */
  public static class Grpc extends IdemGrpcProperties {}

  /** Micrometer observations of attempts (idem.observations.*). */
  private final Observations observations = new Observations();

  /** The {@code idem.observations.*} properties. */
  public static class Observations {
    /**
     * Whether each attempt is a Micrometer observation (idem.attempt: a timer and, with a tracer, a
     * span), when the application has an observation registry. With Micrometer Tracing, false also
     * stops the trace context across the outbox (no context stored with intents, no idem.process
     * observation around a consumer's message).
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  public Observations getObservations() {
    return observations;
  }

  /** The scheduled purge of expired keys (idem.purge.*). */
  private final Purge purge = new Purge();

  /** The {@code idem.purge.*} properties. */
  public static class Purge extends IdemPurgeProperties {}

  /** The {@code idem.outbox.*} properties. */
  public static class Outbox extends IdemOutboxProperties {}

  /** The {@code idem.outbox.relay.*} properties. */
  public static class Relay extends IdemOutboxRelayProperties {}

  /**
   * What a policy of its own sets (an HTTP route's, {@code idem.routes.<name>.*}, or a gRPC
   * method's, {@code idem.grpc.methods.<name>.*}); every unset part is taken from the {@code idem.*}
   * properties.
   */
  public abstract static class Policy extends IdemPolicyProperties {}

  /** The {@code idem.routes.<name>.*} properties: one route's own policy. */
  public static class RoutePolicy extends Policy {
    /** The route, "METHOD /path-pattern" as in idem.required-key-routes, such as "POST /payments". */
    private @Nullable String route;

    public @Nullable String getRoute() {
      return route;
    }

    public void setRoute(@Nullable String route) {
      this.route = route;
    }
  }

  /** The {@code idem.grpc.methods.<name>.*} properties: one gRPC method's (or service's) own policy. */
  public static class GrpcMethodPolicy extends Policy {
    /**
     * The method, by gRPC's full method name ("package.Service/Method", such as
     * "orders.Orders/Create"), or every unary method of a service ("package.Service/*").
     */
    private @Nullable String method;

    public @Nullable String getMethod() {
      return method;
    }

    public void setMethod(@Nullable String method) {
      this.method = method;
    }
  }

  /** What a key's operation is named after. */
  public enum OperationNames {
    /** The Spring MVC handler's path pattern the request reaches, else the route's. */
    HANDLER,
    /** The matching route's pattern. */
    ROUTE
  }

  /** Where the principal of a key's scope comes from. */
  public enum PrincipalSource {
    /** spring-security when Spring Security is on the class path; otherwise refuse to start. */
    AUTO,
    /** The name of Spring Security's authenticated user (SecurityContextHolder). */
    SPRING_SECURITY,
    /** The servlet container's user, HttpServletRequest.getUserPrincipal(). */
    SERVLET,
    /** One scope for every caller: for single-tenant applications only. */
    SHARED
  }

  /** The {@code idem.redis.*} properties. */
  public static class Redis {
    /**
     * The prefix of every Redis key of the store (default idem:), 1 to 200 characters without a
     * control character, '{' or '}': the braces around each record's digest are its Redis Cluster
     * hash tag, and braces in the prefix would become the tag instead, putting every record in one
     * slot.
     */
    private @Nullable String keyPrefix;

    public @Nullable String getKeyPrefix() {
      return keyPrefix;
    }

    public void setKeyPrefix(@Nullable String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }

    /** Waiting for replicas after each write (idem.redis.durability.*). */
    private final Durability durability = new Durability();

    public Durability getDurability() {
      return durability;
    }
  }

  /**
   * The {@code idem.redis.durability.*} properties: see {@code dev.idem.redis.RedisDurability} for
   * what each mode survives.
   */
  public static class Durability extends IdemRedisDurabilityProperties {}

  /**
   * The {@code idem.protection.*} properties: AES-256-GCM encryption of every stored response
   * (status, headers, body) with a keyring of named keys. Off when {@code current-key} is absent.
   */
  public static class Protection extends IdemProtectionProperties {}

  /** The store kinds. */
  public enum StoreType {
    /**
     * Redis when idem-redis is on the class path and the application has a Jedis UnifiedJedis bean
     * or Spring Data Redis's RedisConnectionFactory (spring-boot-starter-data-redis), else JDBC when
     * a DataSource exists, else memory.
     */
    AUTO,
    /** The application's DataSource. */
    JDBC,
    /**
     * Redis (needs idem-redis): the application's Jedis UnifiedJedis bean if it has one, else the
     * RedisConnectionFactory Spring Boot configures from spring.data.redis.* (spring-boot-starter-data-redis,
     * Lettuce or Jedis).
     */
    REDIS,
    /** In the JVM's memory: for tests and single-instance demos only. */
    MEMORY,
    /**
     * The key table in the application's R2DBC ConnectionFactory (needs idem-r2dbc), without
     * blocking: for the WebFlux filter in lease mode only (docs/reactive.md). With {@code auto}, a
     * WebFlux application with idem-r2dbc and a ConnectionFactory uses it too.
     */
    R2DBC
  }

  /** How the HTTP filter runs handlers. */
  public enum Mode {
    /**
     * Transactional mode when the application has one DataSource (or a {@code @Primary} one) and a
     * transaction manager that manages it (JDBC or JPA), and {@code idem.store} is auto or jdbc;
     * lease mode when it has no DataSource, no transaction manager, or keeps keys in Redis or memory.
     * A choice that cannot be made safely (two DataSources and none primary, a transaction manager
     * of another DataSource) stops the start-up with what to change.
     */
    AUTO,
    /** Lease mode: for handlers with effects outside the database. */
    LEASE,
    /** Transactional mode: for handlers whose effects are writes to the application's DataSource. */
    TRANSACTIONAL
  }

  /** Transactional mode: the order of the key's write in the handler's transaction. */
  public enum Strategy {
    /** The handler, then the key's row completed with its answer: one key statement per create. */
    KEY_LAST,
    /** The key's claim, then the handler, then the claim completed: a duplicate never runs the handler. */
    CLAIM_FIRST
  }

  /** What a duplicate does while the claim is held. */
  public enum InProgress {
    /** Answer 409 with Retry-After at once. */
    FAIL_FAST,
    /** Wait up to max-wait and replay the first request's response. */
    WAIT
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public Mode getMode() {
    return mode;
  }

  public void setMode(Mode mode) {
    this.mode = mode;
  }

  public StoreType getStore() {
    return store;
  }

  public void setStore(StoreType store) {
    this.store = store;
  }

  public String getTable() {
    return table;
  }

  public void setTable(String table) {
    this.table = table;
  }

  public boolean isCreateSchema() {
    return createSchema;
  }

  public void setCreateSchema(boolean createSchema) {
    this.createSchema = createSchema;
  }

  public Duration getRetention() {
    return retention;
  }

  public void setRetention(Duration retention) {
    this.retention = retention;
  }

  public Duration getLease() {
    return lease;
  }

  public void setLease(Duration lease) {
    this.lease = lease;
  }

  public Strategy getStrategy() {
    return strategy;
  }

  public void setStrategy(Strategy strategy) {
    this.strategy = strategy;
  }

  public InProgress getInProgress() {
    return inProgress;
  }

  public void setInProgress(InProgress inProgress) {
    this.inProgress = inProgress;
  }

  public Duration getMaxWait() {
    return maxWait;
  }

  public void setMaxWait(Duration maxWait) {
    this.maxWait = maxWait;
  }

  public DataSize getMaxBodySize() {
    return maxBodySize;
  }

  public void setMaxBodySize(DataSize maxBodySize) {
    this.maxBodySize = maxBodySize;
  }

  public DataSize getMaxResponseSize() {
    return maxResponseSize;
  }

  public void setMaxResponseSize(DataSize maxResponseSize) {
    this.maxResponseSize = maxResponseSize;
  }

  public URI getProblemTypeBase() {
    return problemTypeBase;
  }

  public void setProblemTypeBase(URI problemTypeBase) {
    this.problemTypeBase = problemTypeBase;
  }

  public List<String> getRequiredKeyRoutes() {
    return requiredKeyRoutes;
  }

  public void setRequiredKeyRoutes(List<String> requiredKeyRoutes) {
    this.requiredKeyRoutes = requiredKeyRoutes;
  }

  public List<String> getOptionalKeyRoutes() {
    return optionalKeyRoutes;
  }

  public void setOptionalKeyRoutes(List<String> optionalKeyRoutes) {
    this.optionalKeyRoutes = optionalKeyRoutes;
  }

  public String getAnonymousPrincipal() {
    return anonymousPrincipal;
  }

  public void setAnonymousPrincipal(String anonymousPrincipal) {
    this.anonymousPrincipal = anonymousPrincipal;
  }

  public String getMethodPrincipal() {
    return methodPrincipal;
  }

  public void setMethodPrincipal(String methodPrincipal) {
    this.methodPrincipal = methodPrincipal;
  }

  public PrincipalSource getPrincipal() {
    return principal;
  }

  public void setPrincipal(PrincipalSource principal) {
    this.principal = principal;
  }

  public Duration getMaxRetryAfter() {
    return maxRetryAfter;
  }

  public void setMaxRetryAfter(Duration maxRetryAfter) {
    this.maxRetryAfter = maxRetryAfter;
  }

  public Redis getRedis() {
    return redis;
  }

  public OperationNames getOperationNames() {
    return operationNames;
  }

  public void setOperationNames(OperationNames operationNames) {
    this.operationNames = operationNames;
  }

  public boolean isEarlierOperationNames() {
    return earlierOperationNames;
  }

  public void setEarlierOperationNames(boolean earlierOperationNames) {
    this.earlierOperationNames = earlierOperationNames;
  }

  public Map<String, RoutePolicy> getRoutes() {
    return routes;
  }

  public void setRoutes(Map<String, RoutePolicy> routes) {
    this.routes = routes;
  }

  public Protection getProtection() {
    return protection;
  }

  public Grpc getGrpc() {
    return grpc;
  }

  public Purge getPurge() {
    return purge;
  }

  public Outbox getOutbox() {
    return outbox;
  }
}
