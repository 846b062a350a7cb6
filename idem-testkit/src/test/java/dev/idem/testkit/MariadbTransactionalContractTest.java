package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contracts on MariaDB (or MySQL), in a database of its own ({@link
 * TestDatabase}). Skipped with a message when the server is not reachable; a failure under {@code
 * CI=true}.
 */
class MariadbTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(DB.target());
  }
}
