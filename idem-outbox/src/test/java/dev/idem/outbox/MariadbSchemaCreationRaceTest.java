package dev.idem.outbox;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The schema creation race on a database of its own; see {@link TestDatabase} for skips under CI. */
class MariadbSchemaCreationRaceTest extends SchemaCreationRaceContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected String catalogCountQuery(boolean index) {
    return index
        ? "SELECT COUNT(DISTINCT table_name, index_name) FROM information_schema.statistics"
            + " WHERE table_schema = DATABASE() AND index_name = ?"
        : "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?";
  }
}
