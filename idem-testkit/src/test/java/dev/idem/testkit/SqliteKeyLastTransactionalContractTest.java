package dev.idem.testkit;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contract with {@link JdbcIdempotency.Strategy#KEY_LAST} on an SQLite file (WAL, busy timeout 10 s). */
class SqliteKeyLastTransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected JdbcIdempotency.Strategy strategy() {
    return JdbcIdempotency.Strategy.KEY_LAST;
  }
}
