package dev.idem.outbox;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The schema creation race on a database of its own; see {@link TestDatabase} for skips under CI. */
class PostgresSchemaCreationRaceTest extends SchemaCreationRaceContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected String catalogCountQuery(boolean index) {
    return "SELECT COUNT(*) FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace"
        + " WHERE n.nspname = current_schema() AND k.relname = ? AND k.relkind IN " + (index ? "('i')" : "('r', 'p')");
  }
}
