package dev.idem.testkit;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The transactional contracts on an in-memory H2 database (native mode, lock timeout 10 s). */
class H2TransactionalContractTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.h2();

  /** @return the database every contract below runs on */
  static TransactionalTarget under() {
    return TransactionalTarget.of(DB.target());
  }

  @Nested
  class Execute extends ExecuteContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  @Nested
  class Failures extends FailureContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  @Nested
  class Concurrency extends ConcurrencyContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  @Nested
  class KeyTable extends KeyTableContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  @Nested
  class KeyStatus extends KeyStatusContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  @Nested
  class Protection extends ResponseProtectionContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  @Nested
  class Runner extends RunnerContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  @Nested
  class InProgress extends InProgressContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }

  /** Idem's own: the lab's scenarios on this database (not a published contract). */
  @Nested
  class LabScenarios extends LabScenariosContract {
    @Override
    protected TransactionalTarget target() {
      return under();
    }
  }
}
