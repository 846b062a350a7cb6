package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The published transactional contracts on MariaDB through MySQL Connector/J ({@link
 * MysqlConnectorJ}) rather than MariaDB Connector/J ({@link MariadbTransactionalContractTest}).
 * Skipped with a message when the server is not reachable; a failure under {@code CI=true}.
 */
class MariadbMysqlConnectorTransactionalContractTest extends AllTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(MysqlConnectorJ.target(DB));
  }
}
