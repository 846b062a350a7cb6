package dev.idem.spring;

import dev.idem.testkit.TestDatabase;
import org.junit.jupiter.api.extension.RegisterExtension;

class PostgresConsumerWritesThroughSpringBeansTest extends ConsumerWritesThroughSpringBeansContract {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Override
  protected TestDatabase database() {
    return DB;
  }
}
