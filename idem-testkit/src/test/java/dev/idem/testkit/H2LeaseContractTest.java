package dev.idem.testkit;

import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease contract on {@link JdbcLeaseStore} over an in-memory H2 database of its own. */
class H2LeaseContractTest extends JdbcLeaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
