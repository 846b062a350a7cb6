package dev.idem.testkit;

import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The multi-step operation contract on Mariadb. */
class MariadbStepsContractTest extends StepsContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
