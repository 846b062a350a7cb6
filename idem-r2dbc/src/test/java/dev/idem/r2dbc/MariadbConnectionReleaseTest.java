package dev.idem.r2dbc;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link R2dbcLeaseStore} on MariaDB returns every connection, in a database of its own. */
class MariadbConnectionReleaseTest extends ConnectionReleaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected TestDatabase db() {
    return DB;
  }
}
