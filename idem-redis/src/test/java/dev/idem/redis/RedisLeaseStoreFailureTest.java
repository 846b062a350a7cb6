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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The builder's validation and a dead server (127.0.0.1, port 1: nothing listens there). Needs no
 * Redis, so it runs everywhere.
 */
class RedisLeaseStoreFailureTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofMinutes(5);
  private static RedisClient dead;

  private final IdempotentRequest request = new IdempotentRequest(
      Scope.of("alice", "POST /charges"), IdempotencyKey.of("k1"), Fingerprint.ofJson("{}".getBytes(StandardCharsets.UTF_8)));

  @BeforeAll
  static void connectToNothing() {
    dead = RedisClient.builder()
        .hostAndPort("127.0.0.1", 1)
        .clientConfig(DefaultJedisClientConfig.builder().connectionTimeoutMillis(1000).socketTimeoutMillis(1000).build())
        .build();
  }

  @AfterAll
  static void close() {
    dead.close();
  }

  @Test
  void everyOperationOnADeadServerIsAStoreFailureNotAJedisException() {
    RedisLeaseStore store = RedisLeaseStore.builder(dead).build();
    assertStoreFailure(() -> store.claim(request, "owner-a", LEASE, RETENTION), "claim");
    assertStoreFailure(() -> store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "ok"), RETENTION), "complete");
    assertStoreFailure(() -> store.release(request.scope(), request.key(), "owner-a"), "release");
    assertStoreFailure(() -> store.purgeExpired(100), "purge");
  }

  @Test
  void theBuilderValidatesEagerly() {
    assertThatThrownBy(() -> RedisLeaseStore.builder(null)).isInstanceOf(NullPointerException.class);
    RedisLeaseStore.Builder builder = RedisLeaseStore.builder(dead);
    assertThatThrownBy(() -> builder.keyPrefix(null)).isInstanceOf(NullPointerException.class);
    for (String bad : new String[] {"", "app{1}:", "a{", "b}", "line\nbreak", "x".repeat(201)}) {
      assertThatThrownBy(() -> builder.keyPrefix(bad)).as("prefix %s", bad).isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(builder.build().keyPrefix()).isEqualTo(RedisLeaseStore.DEFAULT_KEY_PREFIX).isEqualTo("idem:");
    assertThat(builder.keyPrefix("app*[1]?:").build().keyPrefix()).isEqualTo("app*[1]?:");
  }

  @Test
  void theRecordKeyIsThePrefixAndTheDigestAsAHashTag() {
    RedisLeaseStore store = RedisLeaseStore.builder(dead).build();
    String key = store.recordKey(request.scope(), request.key());
    assertThat(key).matches("idem:\\{[0-9a-f]{64}\\}");
    assertThat(store.recordKey(Scope.of("alice", "POST /charges"), IdempotencyKey.of("k2"))).isNotEqualTo(key);
    assertThat(store.recordKey(Scope.of("alice\u00a0", "POST /charges"), request.key())).isNotEqualTo(key);
  }

  @Test
  void argumentsOutOfRangeAreRejectedBeforeRedisIsAsked() {
    RedisLeaseStore store = RedisLeaseStore.builder(dead).build();
    for (String bad : new String[] {"", "x".repeat(65), "tab\there", "é"}) {
      assertThatThrownBy(() -> store.claim(request, bad, LEASE, RETENTION)).as("owner %s", bad).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.release(request.scope(), request.key(), bad)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> store.claim(request, null, LEASE, RETENTION)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> store.claim(request, "o", Duration.ZERO, RETENTION)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.claim(request, "o", LEASE, LEASE)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.claim(request, "o", LEASE, Duration.ofDays(40_000))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.complete(request.scope(), request.key(), "o", StoredResponse.of(201, "x"), Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.complete(request.scope(), request.key(), "o", null, RETENTION)).isInstanceOf(NullPointerException.class);
  }

  private static void assertStoreFailure(Runnable call, String operation) {
    assertThatThrownBy(call::run)
        .isExactlyInstanceOf(IdemStoreException.class)
        .hasMessageStartingWith("Redis " + operation + " failed")
        .hasCauseInstanceOf(JedisException.class);
  }
}
