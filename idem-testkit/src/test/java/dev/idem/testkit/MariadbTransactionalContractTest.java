package dev.idem.testkit;

import dev.idem.lab.JdbcTarget;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contract on MariaDB (or MySQL), in a database of its own ({@link
 * TestDatabase}). Skipped with a message when the server is not reachable; a failure under {@code
 * CI=true}.
 */
class MariadbTransactionalContractTest extends TransactionalContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
