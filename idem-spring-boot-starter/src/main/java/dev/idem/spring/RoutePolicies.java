package dev.idem.spring;

import static dev.idem.spring.IdemSettings.configured;

import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The routes with a policy of their own ({@code idem.routes.<name>.*} and {@link IdempotencyPolicy}
 * on handler methods): each becomes an {@link IdempotencyFilterConfig.Route} with an engine of its
 * own mode, store, retention, lease and in-progress answer, unset parts taken from the {@code idem.*}
 * properties. Routes with the same effective policy share one engine. Used once at start-up; not
 * thread-safe.
 */
final class RoutePolicies {

  /**
   * One route's policy as written, nothing inherited yet.
   *
   * @param source where it was written, for messages ({@code idem.routes.payments}, or the handler
   *     method of an annotation)
   */
  record Spec(String source, String method, String pattern, KeyRequirement key, IdemProperties.Mode mode,
      IdemProperties.StoreType store, @Nullable Duration retention, @Nullable Duration lease,
      IdemProperties.@Nullable InProgress inProgress, @Nullable Duration maxWait) {

    Spec {
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(pattern, "pattern");
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(mode, "mode");
      Objects.requireNonNull(store, "store");
    }
  }

  /** The filter's transactional engine, decided as {@code idem.mode=transactional} would; only with spring-jdbc. */
  interface TransactionalEngines {
    /**
     * @return the transactional engine of the application's DataSource and transaction manager
     * @throws IdemConfigurationException when transactional mode cannot run in this application
     */
    TransactionalIdempotency engine();
  }

  /** The effective policy: what makes two routes share an engine. */
  private record Effective(IdemProperties.Mode mode, IdemProperties.StoreType store, Duration retention, Duration lease,
      InProgressPolicy inProgress) {}

  /** A built engine, the reader of its store, and its policy in words. */
  private record Built(IdempotencyEngine engine, @Nullable KeyStatusReader reader, String words) {}

  private final IdemProperties p;
  private final ModeDecision filterMode;
  private final LeaseStore filterStore;
  private final Function<IdemProperties.StoreType, LeaseStore> stores;
  private final @Nullable TransactionalEngines transactional;
  private final IdemListener listener;
  private final Map<Effective, Built> engines = new HashMap<>();
  private final Map<IdemProperties.StoreType, LeaseStore> storesByType = new HashMap<>();
  /** The key tables made at start-up for transactional routes. */
  private final java.util.Set<String> tablesMade = new java.util.HashSet<>();

  /**
   * @param p the properties, for what a policy leaves unset
   * @param filterMode the filter's own mode
   * @param filterStore the application's lease store (the {@code LeaseStore} bean)
   * @param stores makes a store of a given type (jdbc, redis, memory), decorated as the bean is
   * @param transactional the transactional engine, or {@code null} without spring-jdbc
   * @param listener told of every attempt
   */
  RoutePolicies(IdemProperties p, ModeDecision filterMode, LeaseStore filterStore,
      Function<IdemProperties.StoreType, LeaseStore> stores, @Nullable TransactionalEngines transactional, IdemListener listener) {
    this.p = p;
    this.filterMode = filterMode;
    this.filterStore = filterStore;
    this.stores = stores;
    this.transactional = transactional;
    this.listener = listener;
  }

  /**
   * The specs in the order the filter tries them: most specific first, segment by segment from the
   * left (a literal segment before {@code *}, {@code *} before {@code **}, a pattern that ends
   * before one that goes on), whatever their source, so that a catch-all never takes the requests
   * of a more specific policy route. Not the order of the {@code idem.routes} map, which Spring
   * Boot builds from its property sources by precedence (an environment variable overriding one
   * entry moves it first), nor that of Spring MVC's handlers, which is a hash map's. Routes of equal
   * rank match no request in common (or are the same route, refused as named twice) and keep
   * their order.
   *
   * @param specs the specs from the properties and the annotations
   * @return a sorted copy
   */
  static List<Spec> mostSpecificFirst(List<Spec> specs) {
    List<Spec> sorted = new ArrayList<>(specs);
    sorted.sort((a, b) -> compareSpecificity(a.pattern(), b.pattern()));
    return sorted;
  }

  /** Negative when {@code a} is to be tried before {@code b}. */
  static int compareSpecificity(String a, String b) {
    String[] as = segments(a);
    String[] bs = segments(b);
    for (int i = 0; i < Math.min(as.length, bs.length); i++) {
      int c = Integer.compare(rank(as[i]), rank(bs[i]));
      if (c != 0) {
        return c;
      }
    }
    return Integer.compare(as.length, bs.length);
  }

  private static String[] segments(String pattern) {
    String p = pattern.startsWith("/") ? pattern.substring(1) : pattern;
    return p.isEmpty() ? new String[0] : p.split("/", -1);
  }

  private static int rank(String segment) {
    return segment.equals("**") ? 2 : segment.equals("*") ? 1 : 0;
  }

  /**
   * @return the specs of {@code idem.routes.*}, in their order
   * @throws IdemConfigurationException for an entry without a route, or a malformed one
   */
  static List<Spec> fromProperties(IdemProperties p) {
    List<Spec> specs = new ArrayList<>();
    for (Map.Entry<String, IdemProperties.RoutePolicy> e : p.getRoutes().entrySet()) {
      String property = "idem.routes." + e.getKey();
      IdemProperties.RoutePolicy r = e.getValue();
      String[] parts = r.getRoute() == null ? new String[0] : r.getRoute().trim().split("\\s+");
      if (parts.length != 2) {
        throw new IdemConfigurationException(property + ".route", "each route policy names its route as \"METHOD /path-pattern\","
            + " e.g. \"POST /payments\"; got " + (r.getRoute() == null ? "nothing" : "\"" + r.getRoute() + "\""), null);
      }
      specs.add(new Spec(property, parts[0].toUpperCase(Locale.ROOT), parts[1], r.getKey(), r.getMode(), r.getStore(),
          r.getRetention(), r.getLease(), r.getInProgress(), r.getMaxWait()));
    }
    return specs;
  }

  /**
   * @param spec a route's policy
   * @return the route with its engine
   * @throws IdemConfigurationException if the policy cannot run here (transactional mode without a
   *     DataSource, a store that is missing, a lease not shorter than the retention, a bad pattern)
   */
  IdempotencyFilterConfig.Route route(Spec spec) {
    IdempotencyFilterConfig.Route route = configured(spec.source(), () -> IdempotencyFilterConfig.Route.of(spec.method(), spec.pattern(), spec.key()));
    Effective effective = effective(spec);
    Built built = engines.get(effective);
    if (built == null) {
      built = build(spec, effective);
      engines.put(effective, built);
    }
    return route.withEngine(built.engine(), built.reader(), built.words(), effective.retention());
  }

  private Effective effective(Spec spec) {
    IdemProperties.Mode mode = spec.mode();
    if (mode == IdemProperties.Mode.AUTO) {
      boolean outsideTheDatabase = spec.store() == IdemProperties.StoreType.REDIS || spec.store() == IdemProperties.StoreType.MEMORY;
      mode = outsideTheDatabase ? IdemProperties.Mode.LEASE : filterMode.mode;
    }
    if (mode == IdemProperties.Mode.TRANSACTIONAL && spec.store() != IdemProperties.StoreType.AUTO
        && spec.store() != IdemProperties.StoreType.JDBC) {
      throw new IdemConfigurationException(spec.source() + ".store", "is " + lower(spec.store()) + ", but the route's mode is"
          + " transactional, which keeps its keys in the table of the application's DataSource: set mode=lease, or leave the"
          + " store unset", null);
    }
    IdemProperties.InProgress asked = spec.inProgress() != null ? spec.inProgress() : p.getInProgress();
    Duration maxWait = spec.maxWait() != null ? spec.maxWait() : p.getMaxWait();
    InProgressPolicy inProgress = asked == IdemProperties.InProgress.WAIT
        ? configured(spec.source() + ".max-wait", () -> InProgressPolicy.waitUpTo(maxWait))
        : InProgressPolicy.failFast();
    Duration retention = spec.retention() != null ? spec.retention() : p.getRetention();
    Duration lease = spec.lease() != null ? spec.lease() : p.getLease();
    IdemProperties.StoreType store = mode == IdemProperties.Mode.TRANSACTIONAL ? IdemProperties.StoreType.JDBC : spec.store();
    return new Effective(mode, store, retention, lease, inProgress);
  }

  private Built build(Spec spec, Effective e) {
    String inProgressWords = e.inProgress().maxWait().isZero() ? "fail-fast" : "wait up to " + e.inProgress().maxWait();
    if (e.mode() == IdemProperties.Mode.TRANSACTIONAL) {
      TransactionalIdempotency base = filterMode.engine != null ? filterMode.engine : transactionalOrRefuse(spec);
      JdbcIdempotency keys = base.keys();
      if (!keys.retention().equals(e.retention())) {
        JdbcIdempotency.Builder b = JdbcIdempotency.builder().table(keys.table()).responsePolicy(keys.responsePolicy())
            .responseProtection(keys.responseProtection()).strategy(keys.strategy()).claimLockWait(keys.claimLockWait())
            .createSchema(p.isCreateSchema());
        keys = configured(spec.source() + ".retention", () -> b.retention(e.retention()).build());
      }
      TransactionalIdempotency engine = new TransactionalIdempotency(keys, base.transactions(), listener, e.inProgress());
      DataSource dataSource = base.transactions().dataSource();
      if (p.isCreateSchema() && tablesMade.add(keys.table())) {
        // At start-up, as the filter's own transactional mode does: with the filter's keys in Redis
        // or memory the table was not made, and the first request's status read (the look under the
        // route's name, the key status endpoint) would fail on it and answer 503 for ever.
        try (Connection c = dataSource.getConnection()) {
          if (!c.getAutoCommit()) {
            c.setAutoCommit(true);
          }
          keys.createSchema(c);
        } catch (SQLException ex) {
          throw new IdemStoreException("cannot create the idempotency table " + keys.table() + " for " + spec.source() + ": "
              + ex.getMessage(), ex);
        }
      }
      JdbcIdempotency statusKeys = keys;
      KeyStatusReader reader = (scope, key) -> {
        try (Connection c = dataSource.getConnection()) {
          if (!c.getAutoCommit()) {
            c.setAutoCommit(true);
          }
          return statusKeys.status(c, scope, key);
        } catch (SQLException ex) {
          throw new IdemStoreException("cannot get a connection from the data source: " + ex.getMessage(), ex);
        }
      };
      return new Built(engine, reader, "transactional mode, table " + keys.table() + ", retention " + e.retention()
          + ", in progress " + inProgressWords);
    }
    LeaseStore store = e.store() == IdemProperties.StoreType.AUTO ? filterStore
        : storesByType.computeIfAbsent(e.store(), stores);
    LeaseIdempotency.Builder b = LeaseIdempotency.builder(store).listener(listener).inProgress(e.inProgress());
    configured(spec.source() + ".lease", () -> b.lease(e.lease()));
    configured(spec.source() + ".retention", () -> b.retention(e.retention()));
    LeaseIdempotency engine = configured(spec.source() + ".retention", b::build);
    LeaseStore plain = store instanceof TimedLeaseStore timed ? timed.delegate() : store;
    KeyStatusReader reader = plain instanceof KeyStatusReader r ? r : null;
    return new Built(engine, reader, "lease mode, store " + IdemWebConfiguration.describe(store) + ", retention " + e.retention()
        + ", lease " + e.lease() + ", in progress " + inProgressWords);
  }

  private TransactionalIdempotency transactionalOrRefuse(Spec spec) {
    if (transactional == null) {
      throw new IdemConfigurationException(spec.source() + ".mode", IdemTransactionalConfiguration.TRANSACTIONAL_NEEDS_SPRING_JDBC, null);
    }
    try {
      return transactional.engine();
    } catch (IdemConfigurationException e) {
      throw new IdemConfigurationException(spec.source() + ".mode", "is transactional, but " + e.getMessage(), e);
    }
  }

  private static String lower(Enum<?> e) {
    return e.name().toLowerCase(Locale.ROOT);
  }
}
