package dev.idem.r2dbc;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Transactional mode on R2DBC over MariaDB, in a database of its own. */
class MariadbR2dbcTransactionalTest extends R2dbcTransactionalContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected TestDatabase db() {
    return DB;
  }
}
