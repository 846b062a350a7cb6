package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contracts on an SQLite file (WAL, busy timeout 10 s). */
class SqliteTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(DB.target());
  }
}
