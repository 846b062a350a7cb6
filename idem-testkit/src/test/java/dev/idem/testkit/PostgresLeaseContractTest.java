package dev.idem.testkit;

import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease contract on {@link JdbcLeaseStore} over Postgres, in a database of its own. */
class PostgresLeaseContractTest extends JdbcLeaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
