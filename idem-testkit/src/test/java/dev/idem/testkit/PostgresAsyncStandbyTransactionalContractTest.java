package dev.idem.testkit;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contracts on a PostgreSQL primary with an asynchronous standby (streaming replication,
 * {@code synchronous_standby_names} empty), through a URL that
 * names both servers with {@code targetServerType=primary} ({@link PostgresStandbyTestServers}).
 */
class PostgresAsyncStandbyTransactionalContractTest {

  @RegisterExtension static final PostgresStandbyTestServers PG = PostgresStandbyTestServers.asynchronous();

  /** @return the database every contract below runs on */
  static TransactionalTarget under() {
    return TransactionalTarget.of(PG.target());
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
