package dev.idem.r2dbc;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link R2dbcLeaseStore} on PostgreSQL returns every connection, in a database of its own. */
class PostgresConnectionReleaseTest extends ConnectionReleaseContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected TestDatabase db() {
    return DB;
  }
}
