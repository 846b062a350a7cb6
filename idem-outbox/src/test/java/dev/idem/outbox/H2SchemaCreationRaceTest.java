package dev.idem.outbox;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The schema creation race on an in-memory H2 database of its own. */
class H2SchemaCreationRaceTest extends SchemaCreationRaceContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected String catalogCountQuery(boolean index) {
    return index
        ? "SELECT COUNT(*) FROM INFORMATION_SCHEMA.INDEXES WHERE TABLE_SCHEMA = CURRENT_SCHEMA AND LOWER(INDEX_NAME) = LOWER(?)"
        : "SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = CURRENT_SCHEMA AND LOWER(TABLE_NAME) = LOWER(?)"
            + " AND TABLE_TYPE = 'BASE TABLE'";
  }
}
