package dev.idem.testkit;

import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The multi-step operation contract on an in-memory H2 database. */
class H2StepsContractTest extends StepsContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
