package dev.idem.testkit;

import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lease contract on {@link JdbcLeaseStore} over MariaDB through MySQL Connector/J ({@link MysqlConnectorJ}). */
class MariadbMysqlConnectorLeaseContractTest extends JdbcLeaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return MysqlConnectorJ.target(DB);
  }
}
