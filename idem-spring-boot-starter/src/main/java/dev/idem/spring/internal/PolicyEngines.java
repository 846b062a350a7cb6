package dev.idem.spring.internal;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemStoreDecorator;
import dev.idem.spring.IdempotencyPolicy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The engines of policies of their own (HTTP routes' {@code idem.routes.<name>.*} and {@link
 * IdempotencyPolicy}, gRPC methods' {@code idem.grpc.methods.<name>.*}): each policy's mode, store,
 * retention, lease and in-progress answer, unset parts taken from the {@code idem.*} properties.
 * Policies with the same effective settings share one engine. No servlet or gRPC type: the HTTP
 * and gRPC configurations each add their own. Used once at start-up; not thread-safe.
 */
public final class PolicyEngines {

  /**
   * One policy as written, nothing inherited yet.
   *
   * @param source where it was written, for messages ({@code idem.routes.payments}, {@code
   *     idem.grpc.methods.charge}, or the handler method of an annotation)
   */
  public record Policy(String source, IdemProperties.Mode mode, IdemProperties.StoreType store, @Nullable Duration retention,
      @Nullable Duration lease, IdemProperties.@Nullable InProgress inProgress, @Nullable Duration maxWait) {

    public Policy {
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(mode, "mode");
      Objects.requireNonNull(store, "store");
    }
  }

  /** The filter's transactional engine, decided as {@code idem.mode=transactional} would; only with spring-jdbc. */
  public interface TransactionalEngines {
    /**
     * @return the transactional engine of the application's DataSource and transaction manager
     * @throws IdemConfigurationException when transactional mode cannot run in this application
     */
    TransactionalIdempotency engine();
  }

  /** The effective policy: what makes two policies share an engine. */
  private record Effective(IdemProperties.Mode mode, IdemProperties.StoreType store, Duration retention, Duration lease,
      InProgressPolicy inProgress) {}


  /**
   * A built engine, the reader of its store, its retention, and its policy in words.
   *
   * @param reader reads its keys' statuses, {@code null} when its store cannot
   */
  public record Built(IdempotencyEngine engine, @Nullable KeyStatusReader reader, Duration retention, String words) {}

  private final IdemProperties p;
  private final ModeDecision filterMode;
  private final LeaseStore filterStore;
  private final Function<IdemProperties.StoreType, LeaseStore> stores;
  private final @Nullable TransactionalEngines transactional;
  private final IdemListener listener;
  private final Map<Effective, Built> engines = new HashMap<>();
  private final Map<IdemProperties.StoreType, LeaseStore> storesByType = new HashMap<>();
  /** The key tables made at start-up for transactional routes. */
  private final Set<String> tablesMade = new HashSet<>();

  /**
   * @param p the properties, for what a policy leaves unset
   * @param filterMode the filter's own mode
   * @param filterStore the application's lease store (the {@code LeaseStore} bean)
   * @param stores makes a store of a given type (jdbc, redis, memory), decorated as the bean is
   * @param transactional the transactional engine, or {@code null} without spring-jdbc
   * @param listener told of every attempt
   */
  public PolicyEngines(IdemProperties p, ModeDecision filterMode, LeaseStore filterStore,
      Function<IdemProperties.StoreType, LeaseStore> stores, @Nullable TransactionalEngines transactional, IdemListener listener) {
    this.p = p;
    this.filterMode = filterMode;
    this.filterStore = filterStore;
    this.stores = stores;
    this.transactional = transactional;
    this.listener = listener;
  }

  /**
   * @param property the property that asked for a store, for messages ({@code idem.routes.*.store})
   * @return makes a store of a given type (jdbc, redis, memory) as {@code idem.store} would, decorated
   *     as the {@code LeaseStore} bean is
   */
  public static Function<IdemProperties.StoreType, LeaseStore> stores(IdemProperties p, String property, @Nullable DataSource dataSource,
      @Nullable RedisStores redis, List<IdemStoreDecorator> decorators) {
    return type -> {
      LeaseStore made = StoreChoice.chooseStore(p, type, property, dataSource, redis);
      for (IdemStoreDecorator decorator : decorators) {
        made = decorator.decorate(made);
      }
      return made;
    };
  }

  /**
   * @param policy a policy
   * @return its engine, shared with every policy of the same effective settings
   * @throws IdemConfigurationException if the policy cannot run here (transactional mode without a
   *     DataSource, a store that is missing, a lease not shorter than the retention)
   */
  public Built engine(Policy policy) {
    Effective effective = effective(policy);
    Built built = engines.get(effective);
    if (built == null) {
      built = build(policy, effective);
      engines.put(effective, built);
    }
    return built;
  }

  private Effective effective(Policy spec) {
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

  private Built build(Policy spec, Effective e) {
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
      return new Built(engine, reader, e.retention(), "transactional mode, table " + keys.table() + ", retention " + e.retention()
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
    return new Built(engine, reader, e.retention(), "lease mode, store " + IdemSettings.describe(store) + ", retention " + e.retention()
        + ", lease " + e.lease() + ", in progress " + inProgressWords);
  }

  private TransactionalIdempotency transactionalOrRefuse(Policy spec) {
    if (transactional == null) {
      throw new IdemConfigurationException(spec.source() + ".mode", ModeDecisions.TRANSACTIONAL_NEEDS_SPRING_JDBC, null);
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
