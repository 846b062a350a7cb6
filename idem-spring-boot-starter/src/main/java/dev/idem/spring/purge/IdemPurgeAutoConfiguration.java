package dev.idem.spring.purge;

import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.BlockingLeaseStore;
import dev.idem.spring.internal.IdemSettings;
import dev.idem.spring.internal.RedisStores;
import dev.idem.spring.internal.StoreChoice;
import dev.idem.spring.internal.TimedLeaseStore;
import dev.idem.spring.openapi.IdemOpenApiAutoConfiguration;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;

/**
 * The scheduled purge of expired keys ({@link IdemPurgeScheduler}, {@code idem.purge.*}), on by
 * default: the key table when the application keeps its keys in its DataSource, the lease store
 * of {@code idem.store}, and on WebFlux the R2DBC key table (both modes' records, through {@code
 * R2dbcLeaseStore} on the purge's own thread); one instance at a time. With {@code idem.purge.enabled=false} a
 * start-up line says that nothing on this instance purges.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemOpenApiAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
public class IdemPurgeAutoConfiguration {

  /** idem-r2dbc's lease store, named so that this class needs no idem-r2dbc on the class path. */
  static final String R2DBC_LEASE_STORE = "dev.idem.r2dbc.R2dbcLeaseStore";

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  @Bean
  @ConditionalOnProperty(prefix = "idem.purge", name = "enabled", havingValue = "true", matchIfMissing = true)
  IdemPurgeScheduler idemPurgeScheduler(IdemProperties p, ObjectProvider<JdbcIdempotency> jdbc,
      ObjectProvider<DataSource> dataSource, ObjectProvider<LeaseStore> leaseStore,
      ObjectProvider<RedisStores> redis, ObjectProvider<AsyncLeaseStore> asyncStores) {
    IdemProperties.Purge s = p.getPurge();
    IdemSettings.configured("idem.purge.interval", () -> {
      if (s.getInterval() == null || s.getInterval().compareTo(java.time.Duration.ofMinutes(1)) < 0) {
        throw new IllegalArgumentException("must be at least one minute, was " + s.getInterval());
      }
      return null;
    });
    IdemSettings.configured("idem.purge.initial-delay", () -> {
      if (s.getInitialDelay() == null || s.getInitialDelay().isNegative()) {
        throw new IllegalArgumentException("must be 0 or more, was " + s.getInitialDelay());
      }
      return null;
    });
    IdemSettings.configured("idem.purge.batch-size", () -> {
      if (s.getBatchSize() < 1 || s.getBatchSize() > 100_000) {
        throw new IllegalArgumentException("must be between 1 and 100000, was " + s.getBatchSize());
      }
      return null;
    });
    JdbcIdempotency keys = jdbc.getIfUnique();
    DataSource ds = dataSource.getIfUnique();
    boolean table = keys != null && ds != null
        && StoreChoice.keyTableInUse(p, redis.getIfAvailable());
    LeaseStore leases = leaseStore.getIfUnique();
    LeaseStore unwrapped = leases instanceof TimedLeaseStore timed ? timed.delegate() : leases;
    if (table && unwrapped instanceof JdbcLeaseStore) {
      leases = null; // idem.store=jdbc keeps its leases in the same key table (idem.table): purged once, as the table
    }
    // WebFlux: the R2DBC key table (both modes keep their keys there), purged through its lease
    // store on the purge's own thread, and the lock of the instances sharing it
    AsyncLeaseStore r2dbc = asyncStores.orderedStream()
        .filter(store -> store.getClass().getName().equals(R2DBC_LEASE_STORE))
        .findFirst().orElse(null);
    if (r2dbc != null && !table) {
      LeaseStore shared = new BlockingLeaseStore(r2dbc);
      return new IdemPurgeScheduler(null, null, shared, shared, "r2dbc-table", s);
    }
    if (!table && leases == null) {
      return null; // nothing to purge: no bean
    }
    LeaseStore lock = table
        ? JdbcLeaseStore.builder(ds).table(keys.table()).createSchema(false).build()
        : leases;
    return new IdemPurgeScheduler(table ? keys : null, table ? ds : null, leases, lock,
        table ? keys.table() : "lease-store", s);
  }

  @Bean
  @ConditionalOnProperty(prefix = "idem.purge", name = "enabled", havingValue = "false")
  ApplicationListener<ApplicationReadyEvent> idemPurgeDisabled() {
    return event -> LOG.info("Idem: nothing on this instance purges expired keys (idem.purge.enabled=false): run `idem purge`"
        + " on a schedule, or enable it on one instance, or the key table grows without bound");
  }
}
