package dev.idem.outbox;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The outbox store contract on an in-memory H2 database of its own. */
class H2OutboxStoreTest extends OutboxStoreContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }
}
