package dev.idem.testkit;

import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcLeaseStore;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease contract on {@link JdbcLeaseStore} over Sqlite, in a database of its own. */
class SqliteLeaseContractTest extends LeaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  private static JdbcLeaseStore store;

  @Override
  protected synchronized LeaseStore store() {
    if (store == null) {
      store = JdbcLeaseStore.builder(DB.target().dataSource()).table("lease_keys").build();
    }
    return store;
  }
}
