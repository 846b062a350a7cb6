package dev.idem.testkit;

import dev.idem.jdbc.JdbcIdempotency;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contracts with {@link JdbcIdempotency.Strategy#KEY_LAST} on PostgreSQL, in a database of its own. */
class PostgresKeyLastTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(DB.target()).strategy(JdbcIdempotency.Strategy.KEY_LAST);
  }
}
