package dev.idem.testkit;

import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease contract on {@link JdbcLeaseStore} over Mariadb, in a database of its own. */
class MariadbLeaseContractTest extends JdbcLeaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
