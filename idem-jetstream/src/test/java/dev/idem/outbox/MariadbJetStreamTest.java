package dev.idem.outbox;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The outbox and consumer contract on Mariadb with JetStream; skipped with a message when either is down, failed under CI. */
class MariadbJetStreamTest extends BrokerContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected BrokerFixture openBroker() throws Exception {
    return new JetStreamFixture();
  }
}
