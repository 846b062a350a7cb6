package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Nodes of a Redis Cluster of this class's own killed ({@code kill -9} of processes the test
 * started) and restarted.
 */
class RedisClusterNodeDownTest {

  @RegisterExtension static final RedisClusterTestServer REDIS = RedisClusterTestServer.own();

  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  @Test
  void purgeExpiredDoesNotFailWhenAReplicaIsDownAndReportsAnUnreachableMasterAsPartial() {
    RedisLeaseStore store = REDIS.newStore(RedisDurability.none());
    IdempotentRequest expired = request();
    String expiredKey = store.recordKey(expired.scope(), expired.key());
    store.claim(expired, "owner-a", LEASE, RETENTION);
    store.complete(expired.scope(), expired.key(), "owner-a", StoredResponse.of(201, "old"), RETENTION);
    REDIS.client().persist(expiredKey);
    REDIS.client().hset(expiredKey, "expires_at", "1");

    int master = REDIS.cluster().masters().get(0);
    int replica = REDIS.cluster().replicasOf(master).get(0);
    REDIS.cluster().kill(replica);
    try {
      assertThat(store.purgeExpired(10)).as("records purged with a replica down").isEqualTo(1);
      assertThat(REDIS.client().exists(expiredKey)).isFalse();
    } finally {
      REDIS.cluster().restart(replica);
      REDIS.cluster().awaitHealthy(60_000);
    }

    // a master that owns slots and cannot be reached: the other masters are swept, the result says partial
    int other = REDIS.cluster().masters().get(1);
    REDIS.cluster().freeze(other);
    try (var client = REDIS.newClient(300)) {
      RedisLeaseStore shortTimeout = RedisLeaseStore.builder(client).keyPrefix(REDIS.prefix()).build();
      assertThatThrownBy(() -> shortTimeout.purgeExpired(10))
          .isInstanceOf(IdemStoreException.class)
          .hasMessageContaining("partial")
          .hasMessageContaining("127.0.0.1:" + other);
    } finally {
      REDIS.cluster().thaw(other);
      REDIS.cluster().awaitHealthy(60_000);
    }
  }

  private static IdempotentRequest request() {
    return new IdempotentRequest(Scope.of("alice", "POST /payments"), IdempotencyKey.of(UUID.randomUUID().toString()),
        Fingerprint.ofJson("{\"amount\":1}".getBytes(StandardCharsets.UTF_8)));
  }
}
