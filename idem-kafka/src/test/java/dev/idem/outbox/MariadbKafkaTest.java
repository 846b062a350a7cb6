package dev.idem.outbox;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The outbox and consumer contract on Mariadb with the in-process Kafka broker; skipped with a message when the database is down, failed under CI. */
class MariadbKafkaTest extends BrokerContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected JdbcTarget target() {
    return DB.target();
  }

  @Override
  protected BrokerFixture openBroker() throws Exception {
    return new KafkaFixture();
  }
}
