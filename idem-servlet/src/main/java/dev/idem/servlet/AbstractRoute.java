package dev.idem.servlet;

import dev.idem.core.IdempotencyEngine;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Scope;
import dev.idem.servlet.IdempotencyFilterConfig.Route;
import dev.idem.core.http.HeaderRules;
import dev.idem.core.http.PathPattern;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The body of {@link IdempotencyFilterConfig.Route}: what a route is (method, path pattern, key
 * requirement, its own engine) and how it matches a request. Package-private, so that the type
 * applications name stays {@code IdempotencyFilterConfig.Route}, whose public methods these are;
 * it lives in a file of its own to keep the configuration's file readable. Immutable and
 * thread-safe.
 */
abstract sealed class AbstractRoute permits Route {
  private final String method;
  private final String pattern;
  private final KeyRequirement requirement;
  private final PathPattern compiled;
  private final @Nullable IdempotencyEngine engine;
  private final @Nullable KeyStatusReader statusReader;
  private final @Nullable String policy;
  private final @Nullable Duration retention;

  AbstractRoute(AbstractRoute route, IdempotencyEngine engine, @Nullable KeyStatusReader statusReader, String policy,
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

  AbstractRoute(String method, String pattern, KeyRequirement requirement) {
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
    return o instanceof AbstractRoute r && r.method.equals(method) && r.pattern.equals(pattern)
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
