package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import dev.idem.testkit.AsyncLeaseStoreContract;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The lease-store contract on the non-blocking store over Lettuce's cluster connection, on the test
 * run's Redis Cluster ({@link RedisClusterTestServer}: three masters, three replicas), where
 * Lettuce routes each script by its record key; and the upgrade rule there: a record of the
 * blocking store on Jedis's cluster client is replayed by the non-blocking one, and the other way
 * round.
 */
class AsyncRedisClusterLeaseContractTest extends AsyncLeaseStoreContract {

  @RegisterExtension static final RedisClusterTestServer REDIS = RedisClusterTestServer.shared();

  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  private static RedisClusterClient lettuce;
  private static StatefulRedisClusterConnection<byte[], byte[]> connection;

  private AsyncRedisLeaseStore store;

  @Override
  protected AsyncLeaseStore asyncStore() {
    if (store == null) {
      store = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(connection())).keyPrefix(REDIS.prefix()).build();
    }
    return store;
  }

  /** As on one server: Redis expires records by itself, so what is left for the purge is timing. */
  @Override
  protected boolean purgeCountsRecords() {
    return false;
  }

  @Test
  void recordsOfTheBlockingClusterStoreAndTheAsyncOneAreTheSame() throws Exception {
    RedisLeaseStore blocking = REDIS.newStore(RedisDurability.none());
    AsyncRedisLeaseStore async = (AsyncRedisLeaseStore) asyncStore();
    for (int i = 0; i < 8; i++) { // keys in several slots, so on several masters
      IdempotentRequest one = request();
      blocking.claim(one, "owner-a", LEASE, RETENTION);
      blocking.complete(one.scope(), one.key(), "owner-a", StoredResponse.of(201, "blocking " + i), RETENTION);
      ClaimResult replay = async.claimAsync(one, "owner-b", LEASE, RETENTION).toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(replay.state()).isEqualTo(ClaimResult.State.COMPLETED);
      assertThat(replay.response().bodyAsString()).isEqualTo("blocking " + i);

      IdempotentRequest two = request();
      async.claimAsync(two, "owner-a", LEASE, RETENTION).toCompletableFuture().get(10, TimeUnit.SECONDS);
      async.completeAsync(two.scope(), two.key(), "owner-a", StoredResponse.of(201, "async " + i), RETENTION)
          .toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(blocking.claim(two, "owner-b", LEASE, RETENTION).response().bodyAsString()).isEqualTo("async " + i);
    }
  }

  private static synchronized StatefulRedisClusterConnection<byte[], byte[]> connection() {
    if (connection == null) {
      List<RedisURI> nodes = new ArrayList<>();
      for (int port : REDIS.cluster().ports()) {
        nodes.add(RedisURI.create("127.0.0.1", port));
      }
      lettuce = RedisClusterClient.create(nodes);
      connection = lettuce.connect(ByteArrayCodec.INSTANCE);
    }
    return connection;
  }

  @AfterAll
  static synchronized void close() {
    if (connection != null) {
      connection.close();
      lettuce.shutdown();
      connection = null;
      lettuce = null;
    }
  }

  private static IdempotentRequest request() {
    return new IdempotentRequest(Scope.of("alice", "POST /payments"), IdempotencyKey.of(UUID.randomUUID().toString()),
        Fingerprint.ofJson("{\"amount\":1}".getBytes(StandardCharsets.UTF_8)));
  }
}
