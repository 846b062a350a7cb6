package dev.idem.testkit;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional contracts on one node of a three-node Galera Cluster ({@link
 * GaleraTestCluster}), with {@code wsrep_sync_wait=1} on every session: every write is certified
 * and replicated to the two other nodes before its commit returns. Concurrent duplicates on
 * different nodes are {@link GaleraMultiNodeTest}'s.
 */
class GaleraTransactionalContractTest extends LabScenariosTransactionalContracts {

  @RegisterExtension static final GaleraTestCluster GALERA = GaleraTestCluster.shared();

  @Override
  protected TransactionalTarget target() {
    return TransactionalTarget.of(GALERA.target(0));
  }
}
