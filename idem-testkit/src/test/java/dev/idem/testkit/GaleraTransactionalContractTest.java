package dev.idem.testkit;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contracts on one node of a three-node Galera Cluster ({@link
 * GaleraTestCluster}), with {@code wsrep_sync_wait=1} on every session: every write is certified
 * and replicated to the two other nodes before its commit returns. Concurrent duplicates on
 * different nodes are {@link GaleraMultiNodeTest}'s.
 */
class GaleraTransactionalContractTest {

  @RegisterExtension static final GaleraTestCluster GALERA = GaleraTestCluster.shared();

  /** @return the database every contract below runs on */
  static TransactionalTarget under() {
    return TransactionalTarget.of(GALERA.target(0));
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
