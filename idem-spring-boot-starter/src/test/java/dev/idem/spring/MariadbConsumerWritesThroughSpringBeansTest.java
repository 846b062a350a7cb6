package dev.idem.spring;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

class MariadbConsumerWritesThroughSpringBeansTest extends ConsumerWritesThroughSpringBeansContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.mariadb();

  @Override
  protected TestDatabase database() {
    return DB;
  }
}
