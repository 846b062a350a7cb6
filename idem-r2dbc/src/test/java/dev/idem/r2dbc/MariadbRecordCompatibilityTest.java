package dev.idem.r2dbc;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** JDBC and R2DBC lease stores on one MariaDB table, in a database of its own. */
class MariadbRecordCompatibilityTest extends RecordCompatibilityContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected TestDatabase db() {
    return DB;
  }
}
