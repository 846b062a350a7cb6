package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contracts on PostgreSQL, in a database of its own ({@link TestDatabase}).
 * Skipped with a message when the server is not reachable; a failure under {@code CI=true}.
 */
class PostgresTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(DB.target());
  }
}
