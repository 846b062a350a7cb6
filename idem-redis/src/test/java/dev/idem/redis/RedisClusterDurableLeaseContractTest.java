package dev.idem.redis;

import java.time.Duration;

/**
 * The lease contract on the test run's Redis Cluster with {@link RedisDurability#replicas(int,
 * Duration) replicas(1, 2 s)}: every claim, completion, release and replay waits for the master's
 * replica on the connection that ran the script.
 */
class RedisClusterDurableLeaseContractTest extends RedisClusterLeaseContract {

  @Override
  RedisDurability durability() {
    return RedisDurability.replicas(1, Duration.ofSeconds(2));
  }
}
