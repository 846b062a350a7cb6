package dev.idem.redis;

import dev.idem.core.spi.LeaseStore;
import dev.idem.testkit.LeaseContract;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The lease contract on a six-node Redis Cluster that the test run starts itself ({@link
 * RedisClusterTestServer}), through a {@code RedisClusterClient}, without waiting for replicas.
 */
class RedisClusterLeaseContractTest extends LeaseContract {

  @RegisterExtension static final RedisClusterTestServer REDIS = RedisClusterTestServer.shared();

  private final RedisLeaseStore store = REDIS.newStore(RedisDurability.none());

  @Override
  protected LeaseStore store() {
    return store;
  }

  /** As on a single node: Redis expires records by itself (see {@link RedisLeaseContractTest}). */
  @Override
  protected boolean purgeCountsRecords() {
    return false;
  }
}
