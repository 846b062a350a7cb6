package dev.idem.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.jdbc.dialect.MysqlDialect;
import dev.idem.testkit.AsyncLeaseStoreContract;
import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease-store contract on {@link R2dbcLeaseStore} over MariaDB (r2dbc-pool), in a database of its own. */
class MariadbR2dbcLeaseStoreTest extends AsyncLeaseStoreContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  private static ConnectionPool pool;
  private static R2dbcLeaseStore store;

  @Override
  protected AsyncLeaseStore asyncStore() {
    synchronized (MariadbR2dbcLeaseStoreTest.class) {
      if (store == null) {
        pool = R2dbcTestDatabases.pool(DB, 20);
        store = R2dbcLeaseStore.builder(pool).table("lease_keys").build();
      }
      return store;
    }
  }

  /**
   * Regression: MariaDB's purge from the last batch's expiry ({@code KeyTableSql#purgeFrom}) was
   * written but never sent: the R2DBC key table took the MySQL dialect's statements, whose purge
   * deletes each batch from the front of the expiry index. On MariaDB's driver it sends MariaDB's.
   */
  @Test
  void thePurgeSendsMariadbsStatementFromTheLastBatchsExpiry() {
    R2dbcLeaseStore s = (R2dbcLeaseStore) asyncStore();
    String mariadbs = MysqlDialect.INSTANCE.mariadbKeyTableSql("lease_keys").purgeFrom;
    assertThat(mariadbs).contains("RETURNING");
    assertThat(s.sql.purgeFrom).isEqualTo(mariadbs);
  }

  @AfterAll
  static void closePool() {
    if (pool != null) {
      pool.dispose();
    }
  }
}
