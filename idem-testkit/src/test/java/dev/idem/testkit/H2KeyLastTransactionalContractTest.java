package dev.idem.testkit;

import dev.idem.jdbc.JdbcIdempotency;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contracts with {@link JdbcIdempotency.Strategy#KEY_LAST} on an in-memory H2 database (native mode, lock timeout 10 s). */
class H2KeyLastTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(DB.target()).strategy(JdbcIdempotency.Strategy.KEY_LAST);
  }
}
