package dev.idem.testkit;

import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease contract on {@link JdbcLeaseStore} over Sqlite, in a database of its own. */
class SqliteLeaseContractTest extends JdbcLeaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
