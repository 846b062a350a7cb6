package dev.idem.testkit;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contract with {@link JdbcIdempotency.Strategy#KEY_LAST} on an in-memory H2 database (native mode, lock timeout 10 s). */
class H2KeyLastTransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected JdbcIdempotency.Strategy strategy() {
    return JdbcIdempotency.Strategy.KEY_LAST;
  }
}
