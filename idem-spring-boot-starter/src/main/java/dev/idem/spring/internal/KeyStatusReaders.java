package dev.idem.spring.internal;

import dev.idem.core.IdemStoreException;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.spring.IdemConfigurationException;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * The key status readers of the stores, for the key status endpoint and for the filter's check of
 * earlier keys. Stateless.
 */
public final class KeyStatusReaders {

  private KeyStatusReaders() {}

  /** @return a reader of the key table on a connection of its own, in auto-commit */
  public static KeyStatusReader onDataSource(JdbcIdempotency keys, DataSource dataSource) {
    return (scope, key) -> {
      try (Connection c = dataSource.getConnection()) {
        if (!c.getAutoCommit()) {
          c.setAutoCommit(true);
        }
        return keys.status(c, scope, key);
      } catch (SQLException e) {
        throw new IdemStoreException("cannot get a connection from the data source: " + e.getMessage(), e);
      }
    };
  }


  /** @return the reader of the store the filter's keys are in */
  public static KeyStatusReader reader(KeyStatusReader own, ModeDecision mode, LeaseStore store, DataSource dataSource) {
    if (own != null) {
      return own;
    }
    if (mode != null && mode.engine != null) {
      if (dataSource == null) {
        throw new IdemConfigurationException("idem.key-status.enabled",
            "transactional mode without a single DataSource: define a KeyStatusReader bean", null);
      }
      return onDataSource(mode.engine.keys(), dataSource);
    }
    LeaseStore s = store instanceof TimedLeaseStore timed ? timed.delegate() : store;
    if (s instanceof KeyStatusReader reader) {
      return reader;
    }
    throw new IdemConfigurationException("idem.key-status.enabled", "the lease store "
        + (s == null ? "is missing" : s.getClass().getName() + " does not read key statuses (KeyStatusReader)")
        + ": define a KeyStatusReader bean of that store", null);
  }
}
