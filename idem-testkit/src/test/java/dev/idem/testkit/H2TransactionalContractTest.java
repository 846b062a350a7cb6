package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contracts on an in-memory H2 database (native mode, lock timeout 10 s). */
class H2TransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(DB.target());
  }
}
