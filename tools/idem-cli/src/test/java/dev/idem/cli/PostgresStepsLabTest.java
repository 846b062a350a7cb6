package dev.idem.cli;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code idem lab --steps} on PostgreSQL. */
class PostgresStepsLabTest extends StepsLabContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
