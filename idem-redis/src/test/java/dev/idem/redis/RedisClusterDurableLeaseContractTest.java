package dev.idem.redis;

import dev.idem.core.spi.LeaseStore;
import java.time.Duration;
import org.junit.jupiter.api.extension.RegisterExtension;
import dev.idem.testkit.LeaseContract;

/**
 * The lease contract on the test run's Redis Cluster with {@link RedisDurability#replicas(int,
 * Duration) replicas(1, 2 s)}: every claim, completion, release and replay waits for the master's
 * replica on the connection that ran the script.
 */
class RedisClusterDurableLeaseContractTest extends LeaseContract {

  @RegisterExtension static final RedisClusterTestServer REDIS = RedisClusterTestServer.shared();

  private final RedisLeaseStore store = REDIS.newStore(RedisDurability.replicas(1, Duration.ofSeconds(2)));

  @Override
  protected LeaseStore store() {
    return store;
  }

  @Override
  protected boolean purgeCountsRecords() {
    return false;
  }
}
