package dev.idem.redis;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;
import dev.idem.testkit.LeaseContract;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The lease contract on the six-node Redis Cluster that the test run starts itself ({@link
 * RedisClusterTestServer}), through a {@code RedisClusterClient}, with the durability mode a
 * subclass chooses; raw records are read and written through the cluster client, which routes by
 * the record's key.
 */
abstract class RedisClusterLeaseContract extends LeaseContract {

  @RegisterExtension static final RedisClusterTestServer REDIS = RedisClusterTestServer.shared();

  private final RedisLeaseStore store = REDIS.newStore(durability());

  /** @return the durability mode of every store this class makes */
  abstract RedisDurability durability();

  @Override
  protected LeaseStore store() {
    return store;
  }

  /** As on a single node: Redis expires records by itself (see {@link RedisLeaseContractTest}). */
  @Override
  protected boolean purgeCountsRecords() {
    return false;
  }

  @Override
  protected KeyStatusReader statusReader() {
    return store;
  }

  @Override
  protected LeaseStore protectedStore(ResponseProtection protection) {
    return REDIS.newStore(durability(), protection);
  }

  @Override
  protected byte[] rawResponse(Scope scope, IdempotencyKey key) {
    return RawResponses.read(REDIS.client(), store.recordKey(scope, key));
  }

  @Override
  protected void writeRawResponse(Scope scope, IdempotencyKey key, byte[] bytes) {
    RawResponses.write(REDIS.client(), store.recordKey(scope, key), bytes);
  }
}
