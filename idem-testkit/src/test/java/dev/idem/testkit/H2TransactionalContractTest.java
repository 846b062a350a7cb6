package dev.idem.testkit;

import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contract on an in-memory H2 database (native mode, lock timeout 10 s). */
class H2TransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
