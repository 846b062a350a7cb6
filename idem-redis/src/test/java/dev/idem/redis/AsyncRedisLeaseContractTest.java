package dev.idem.redis;

import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.testkit.AsyncLeaseStoreContract;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The lease-store contract on the non-blocking Redis store, through Lettuce's shared connection
 * ({@link LettuceStoreClient}), on the server of {@link RedisTestServer} ({@code
 * IDEM_TEST_REDIS_URL}, default {@code redis://127.0.0.1:6379}) under a key prefix of its own that
 * is deleted afterwards. Skipped with a message when the server is not reachable; a failure under
 * {@code CI=true}.
 */
class AsyncRedisLeaseContractTest extends AsyncLeaseStoreContract {

  @RegisterExtension static final RedisTestServer REDIS = new RedisTestServer();

  private AsyncRedisLeaseStore store;

  @Override
  protected AsyncLeaseStore asyncStore() {
    if (store == null) {
      store = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(REDIS.lettuce())).keyPrefix(REDIS.prefix()).build();
    }
    return store;
  }

  /** As in {@link RedisLeaseContractTest}: Redis expires records by itself, so what is left for the purge is timing. */
  @Override
  protected boolean purgeCountsRecords() {
    return false;
  }
}
