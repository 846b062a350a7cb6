package dev.idem.redis;

/**
 * The lease contract on the test run's Redis Cluster ({@link RedisClusterTestServer}), without
 * waiting for replicas.
 */
class RedisClusterLeaseContractTest extends RedisClusterLeaseContract {

  @Override
  RedisDurability durability() {
    return RedisDurability.none();
  }
}
