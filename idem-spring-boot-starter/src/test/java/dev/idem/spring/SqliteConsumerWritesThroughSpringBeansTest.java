package dev.idem.spring;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

class SqliteConsumerWritesThroughSpringBeansTest extends ConsumerWritesThroughSpringBeansContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  @Override
  protected TestDatabase database() {
    return DB;
  }
}
