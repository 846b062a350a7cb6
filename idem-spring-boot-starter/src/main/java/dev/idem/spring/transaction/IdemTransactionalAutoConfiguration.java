package dev.idem.spring.transaction;

import static dev.idem.spring.internal.IdemSettings.configured;
import static dev.idem.spring.internal.IdemSettings.inProgressPolicy;
import static dev.idem.spring.internal.ModeDecisions.DATA_SOURCE_UTILS;
import static dev.idem.spring.internal.ModeDecisions.TRANSACTIONAL_NEEDS_SPRING_JDBC;
import static dev.idem.spring.internal.ModeDecisions.TRANSACTION_MANAGER;
import static dev.idem.spring.internal.ModeDecisions.withoutSpringJdbc;

import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.jdbc.GaleraSettings;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.ModeDecision;
import dev.idem.spring.internal.ModeDecisions;
import dev.idem.spring.internal.PolicyEngines;
import dev.idem.spring.internal.RedisStores;
import dev.idem.spring.internal.StoreChoice;
import dev.idem.spring.principal.IdemPrincipalAutoConfiguration;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.NoneNestedConditions;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Transactional mode: the key table's engine ({@link JdbcIdempotency}) for {@link Idempotent}
 * methods inside Spring transactions and for the filter, and the filter's {@link ModeDecision}
 * ({@code idem.mode}, see {@link ModeDecisions}; JPA's transaction manager is recognised with
 * spring-orm), in {@link SpringJdbcConfiguration}, only with
 * spring-jdbc and spring-tx ({@code spring-boot-starter-jdbc}). Without them {@code
 * idem.mode=transactional} refuses to start ({@link TransactionalModeRequirements}) and the filter
 * runs in lease mode ({@link #withoutSpringJdbc}).
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemPrincipalAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
public class IdemTransactionalAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemTransactionalAutoConfiguration.class);

  /**
   * How long a claim in transactional mode waits on a running duplicate's row before the duplicate
   * is answered by {@code idem.in-progress}: short, so that waiting duplicates hold no connection.
   */
  static final Duration CLAIM_LOCK_WAIT = Duration.ofMillis(10);

  /**
   * The transactional engine for {@link Idempotent} methods inside Spring transactions and for the
   * filter with {@code idem.mode=transactional}: only with spring-jdbc and spring-tx.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {TRANSACTION_MANAGER, DATA_SOURCE_UTILS})
  static class SpringJdbcConfiguration {

    /** The transactional engine of the key table. */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(DataSource.class)
    JdbcIdempotency idemJdbcIdempotency(IdemProperties p, DataSource dataSource,
        ObjectProvider<RedisStores> redis) {
      // A duplicate of a running request gives up on its row after this instead of holding a
      // pooled connection for as long as the first attempt runs (PostgreSQL, MariaDB).
      JdbcIdempotency.Builder builder = JdbcIdempotency.builder().createSchema(p.isCreateSchema()).claimLockWait(CLAIM_LOCK_WAIT);
      configured("idem.protection", () -> builder.responseProtection(p.getProtection().build()));
      configured("idem.table", () -> builder.table(p.getTable()));
      configured("idem.retention", () -> builder.retention(p.getRetention()));
      builder.strategy(p.getStrategy() == IdemProperties.Strategy.CLAIM_FIRST
          ? JdbcIdempotency.Strategy.CLAIM_FIRST : JdbcIdempotency.Strategy.KEY_LAST);
      JdbcIdempotency idem = builder.build();
      if (!StoreChoice.keyTableInUse(p, redis.getIfAvailable())) {
        // Lease mode on Redis or memory: the DataSource is the application's alone. The table is
        // made on first use if an @Idempotent method ever joins a Spring transaction.
        LOG.debug("Idem: the keys are kept outside the DataSource; the key table {} is not created at start-up", p.getTable());
        return idem;
      }
      if (p.isCreateSchema()) {
        // At start-up, on a connection of its own: created inside a caller's transaction, the table
        // would vanish if that transaction rolled back. Safe when replicas start at the same moment.
        try (Connection c = dataSource.getConnection()) {
          if (!c.getAutoCommit()) {
            c.setAutoCommit(true); // a pool with auto-commit off would roll the DDL back on PostgreSQL
          }
          idem.createSchema(c);
          warnOfGaleraSettings(c);
        } catch (SQLException e) {
          throw new IdemStoreException("cannot create the idempotency table " + p.getTable() + ": " + e.getMessage(), e);
        }
      } else {
        try (Connection c = dataSource.getConnection()) {
          warnOfGaleraSettings(c);
        } catch (SQLException e) {
          LOG.debug("Idem: the Galera settings could not be checked at start-up", e);
        }
      }
      return idem;
    }

    /**
     * On a MariaDB Galera node, warns at start-up of each setting a pooled session lacks for
     * transactional mode ({@link GaleraSettings#problems}: {@code wsrep_sync_wait}, {@code
     * binlog_format}, {@code innodb_autoinc_lock_mode}, {@code wsrep_ready}). A warning, not a
     * refusal: without {@code wsrep_sync_wait=1} a retry on another node may run its effect again
     * before certification rolls it back, which costs work but never commits a second effect.
     */
    private static void warnOfGaleraSettings(Connection c) {
      try {
        for (String problem : GaleraSettings.problems(c)) {
          LOG.warn("Idem: {}", problem);
        }
      } catch (SQLException e) {
        LOG.debug("Idem: the Galera settings could not be checked at start-up", e);
      }
    }

    /**
     * The filter's mode ({@code idem.mode}, auto by default; see {@link ModeDecisions}) and, in
     * transactional mode, its engine: idem-jdbc's transactional engine on Spring's transactions,
     * told to the application's {@link IdemListener} (Micrometer's, when there is a registry), or
     * the application's own {@link TransactionalIdempotency} bean.
     */
    @Bean
    @ConditionalOnClass(name = "jakarta.servlet.Filter")
    ModeDecision idemModeDecision(
        ConfigurableListableBeanFactory beans,
        IdemProperties p,
        ObjectProvider<TransactionalIdempotency> own,
        ObjectProvider<JdbcIdempotency> jdbcIdempotency,
        ObjectProvider<DataSource> dataSource,
        ObjectProvider<PlatformTransactionManager> transactionManager,
        ObjectProvider<IdemListener> listeners,
        ObjectProvider<ModeDecisions.JpaDataSource> jpa) {
      return ModeDecisions.decide(beans, p, own.getIfUnique(), jdbcIdempotency.getIfUnique(), dataSource.getIfUnique(),
          transactionManager.getIfUnique(), listeners.getIfUnique(() -> IdemListener.NONE), inProgressPolicy(p), jpa.getIfAvailable());
    }

    /**
     * The transactional engine for routes and gRPC methods whose own policy asks for transactional
     * mode ({@link PolicyEngines}): the filter's when it runs transactional, else decided as {@code
     * idem.mode=transactional} would decide it, looked up only when such a route exists.
     */
    @Bean
    PolicyEngines.TransactionalEngines idemRouteTransactionalEngines(
        ConfigurableListableBeanFactory beans,
        IdemProperties p,
        ObjectProvider<TransactionalIdempotency> own,
        ObjectProvider<JdbcIdempotency> jdbcIdempotency,
        ObjectProvider<DataSource> dataSource,
        ObjectProvider<PlatformTransactionManager> transactionManager,
        ObjectProvider<IdemListener> listeners,
        ObjectProvider<ModeDecisions.JpaDataSource> jpa) {
      return () -> {
        IdemProperties forced = new IdemProperties();
        forced.setMode(IdemProperties.Mode.TRANSACTIONAL);
        return ModeDecisions.decide(beans, forced, own.getIfUnique(), jdbcIdempotency.getIfUnique(), dataSource.getIfUnique(),
            transactionManager.getIfUnique(), listeners.getIfUnique(() -> IdemListener.NONE), inProgressPolicy(p),
            jpa.getIfAvailable()).engine;
      };
    }

    /** JPA's transaction manager's DataSource, for the mode decision: only with spring-orm. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.orm.jpa.JpaTransactionManager")
    static class JpaConfiguration {
      @Bean
      static ModeDecisions.JpaDataSource idemJpaDataSource() {
        return tm -> tm instanceof JpaTransactionManager jpa ? jpa.getDataSource() : null;
      }
    }
  }

  /**
   * {@code idem.mode=transactional} without spring-jdbc or spring-tx: refuses to start, naming what
   * to add, in every kind of application (the filter's configuration checks it again, for
   * applications that initialize beans lazily).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(prefix = "idem", name = "mode", havingValue = "transactional")
  @Conditional(SpringJdbcMissing.class)
  static class TransactionalModeRequirements {
    TransactionalModeRequirements() {
      throw new IdemConfigurationException("idem.mode", TRANSACTIONAL_NEEDS_SPRING_JDBC, null);
    }
  }

  /** Matches when spring-jdbc or spring-tx (or both) are not on the class path. */
  static final class SpringJdbcMissing extends NoneNestedConditions {
    SpringJdbcMissing() {
      super(ConfigurationPhase.PARSE_CONFIGURATION);
    }

    @ConditionalOnClass(name = {TRANSACTION_MANAGER, DATA_SOURCE_UTILS})
    static class SpringJdbcPresent {}
  }
}
