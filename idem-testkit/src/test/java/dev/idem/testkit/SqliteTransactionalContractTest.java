package dev.idem.testkit;

import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contract on an SQLite file (WAL, busy timeout 10 s). */
class SqliteTransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
