package dev.idem.testkit;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contract with {@link JdbcIdempotency.Strategy#KEY_LAST} on MariaDB (or MySQL), in a database of its own. */
class MariadbKeyLastTransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected JdbcIdempotency.Strategy strategy() {
    return JdbcIdempotency.Strategy.KEY_LAST;
  }
}
