package dev.idem.outbox;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The schema creation race on a database of its own; see {@link TestDatabase} for skips under CI. */
class SqliteSchemaCreationRaceTest extends SchemaCreationRaceContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected String catalogCountQuery(boolean index) {
    return "SELECT COUNT(*) FROM sqlite_master WHERE type = '" + (index ? "index" : "table") + "' AND name = ?";
  }
}
