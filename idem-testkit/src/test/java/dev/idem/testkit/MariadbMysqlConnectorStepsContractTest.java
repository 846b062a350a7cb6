package dev.idem.testkit;

import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The multi-step operation contract on MariaDB through MySQL Connector/J ({@link MysqlConnectorJ}). */
class MariadbMysqlConnectorStepsContractTest extends StepsContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return MysqlConnectorJ.target(DB);
  }
}
