package dev.idem.r2dbc;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** JDBC and R2DBC lease stores on one PostgreSQL table, in a database of its own. */
class PostgresRecordCompatibilityTest extends RecordCompatibilityContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected TestDatabase db() {
    return DB;
  }
}
