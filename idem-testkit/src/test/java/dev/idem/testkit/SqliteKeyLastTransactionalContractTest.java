package dev.idem.testkit;

import dev.idem.jdbc.JdbcIdempotency;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contracts with {@link JdbcIdempotency.Strategy#KEY_LAST} on an SQLite file (WAL, busy timeout 10 s). */
class SqliteKeyLastTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(DB.target()).strategy(JdbcIdempotency.Strategy.KEY_LAST);
  }
}
