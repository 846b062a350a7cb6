package dev.idem.redis;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.spi.LeaseStore;
import dev.idem.testkit.LeaseContract;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The lease contract on Redis ({@link RedisTestServer}: {@code IDEM_TEST_REDIS_URL}, default
 * {@code redis://127.0.0.1:6379}), under a key prefix of its own that is deleted afterwards.
 * Skipped with a message when the server is not reachable; a failure under {@code CI=true}.
 */
class RedisLeaseContractTest extends LeaseContract {

  @RegisterExtension static final RedisTestServer REDIS = new RedisTestServer();

  private final RedisLeaseStore store = REDIS.newStore();

  @Override
  protected LeaseStore store() {
    return store;
  }

  /**
   * Redis removes each record by itself at its {@code expires_at} ({@code PEXPIREAT}), and its
   * active expiry cycle usually does so within milliseconds, well before the contract calls {@code
   * purgeExpired}; what is left for the purge to count is a matter of timing. The purge's count of
   * what it does delete is checked deterministically in {@link RedisLeaseStoreTest}.
   */
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
    return RedisLeaseStore.builder(REDIS.client()).keyPrefix(REDIS.prefix()).responseProtection(protection).build();
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
