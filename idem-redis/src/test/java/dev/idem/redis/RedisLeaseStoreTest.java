package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.core.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.JedisClusterCRC16;

/** What the lease contract cannot see: the Redis key layout, expiry, binary safety, corrupt records. */
class RedisLeaseStoreTest {

  @RegisterExtension static final RedisTestServer REDIS = new RedisTestServer();

  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final Duration RETENTION = Duration.ofMinutes(5);
  private static final String PTTL_AND_NOW_SCRIPT = "local t = redis.call('TIME') "
      + "return {redis.call('PTTL', KEYS[1]), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}";

  private final RedisLeaseStore store = REDIS.newStore();

  @Test
  void oneRecordIsOneHashInOneSlotEvenWhenTheScopeAndKeyContainBraces() throws Exception {
    String principal = "p{" + UUID.randomUUID() + "}";
    IdempotentRequest request = new IdempotentRequest(
        Scope.of(principal, "POST /a}{b"), IdempotencyKey.of("{k}ey}{"), fingerprint("{\"a\":1}"));
    List<String> before = REDIS.keys();

    assertThat(store.claim(request, "owner-a", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "ok"), RETENTION)).isTrue();
    assertThat(store.claim(request, "owner-b", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.COMPLETED);

    List<String> touched = REDIS.keys();
    touched.removeAll(before);
    String hex = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(
        (principal + "\u0000POST /a}{b\u0000{k}ey}{").getBytes(StandardCharsets.UTF_8)));
    String expected = REDIS.prefix() + "{" + hex + "}";
    assertThat(touched).as("every Redis key the store created for the record").containsExactly(expected);
    assertThat(store.recordKey(request.scope(), request.key())).isEqualTo(expected);
    for (String key : touched) {
      assertThat(JedisClusterCRC16.getSlot(key)).as("slot of %s", key).isEqualTo(JedisClusterCRC16.getSlot(hex));
    }

    Map<String, String> fields = REDIS.client().hgetAll(expected);
    assertThat(fields).containsEntry("principal", principal)
        .containsEntry("operation", "POST /a}{b")
        .containsEntry("key", "{k}ey}{")
        .containsEntry("fingerprint", request.fingerprint().hex())
        .containsEntry("state", "COMPLETED")
        .containsEntry("owner", "owner-a")
        .containsKeys("lease_until", "expires_at", "response");
    assertThat(Long.parseLong(fields.get("expires_at"))).isGreaterThan(Long.parseLong(fields.get("lease_until")));
  }

  @Test
  void aRecordCarriesARedisExpiryAtItsExpiresAt() {
    IdempotentRequest request = request("k-ttl");
    String key = store.recordKey(request.scope(), request.key());
    store.claim(request, "owner-a", LEASE, RETENTION);
    assertExpiryMatchesExpiresAt(key, RETENTION);

    Duration shorter = Duration.ofMinutes(2);
    assertThat(store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(200, "done"), shorter)).isTrue();
    assertExpiryMatchesExpiresAt(key, shorter);
  }

  @Test
  void aReleasedClaimLeavesNoKeyBehind() {
    IdempotentRequest request = request("k-release");
    store.claim(request, "owner-a", LEASE, RETENTION);
    assertThat(store.release(request.scope(), request.key(), "owner-b")).isFalse();
    assertThat(store.release(request.scope(), request.key(), "owner-a")).isTrue();
    assertThat(REDIS.client().exists(store.recordKey(request.scope(), request.key()))).isFalse();
  }

  @Test
  void theResponseIsStoredBinarySafe() {
    byte[] body = new byte[512];
    for (int i = 0; i < body.length; i++) {
      body[i] = (byte) i;
    }
    StoredResponse response = StoredResponse.builder(200)
        .header("Content-Type", "application/octet-stream")
        .header("X-Note", "grüße, 日本, \u00e9 and {braces}")
        .body(body)
        .build();
    IdempotentRequest request = request("k-binary");
    store.claim(request, "owner-a", LEASE, RETENTION);
    assertThat(store.complete(request.scope(), request.key(), "owner-a", response, RETENTION)).isTrue();

    ClaimResult replay = store.claim(request, "owner-b", LEASE, RETENTION);
    assertThat(replay.state()).isEqualTo(ClaimResult.State.COMPLETED);
    assertThat(replay.response()).isEqualTo(response);
    assertThat(replay.response().body()).isEqualTo(body);
  }

  @Test
  void aRecordPastItsExpiresAtCountsAsAbsentEvenIfRedisHasNotRemovedIt() {
    IdempotentRequest request = request("k-stale");
    String key = store.recordKey(request.scope(), request.key());
    store.claim(request, "owner-a", LEASE, RETENTION);
    store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "old"), RETENTION);
    expireByHand(key);

    ClaimResult fresh = store.claim(request, "owner-b", LEASE, RETENTION);
    assertThat(fresh.state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(fresh.recovery()).isFalse();
    assertThat(REDIS.client().hgetAll(key)).containsEntry("state", "IN_PROGRESS").containsEntry("owner", "owner-b").doesNotContainKey("response");
    assertThat(REDIS.client().pttl(key)).isPositive();
  }

  @Test
  void anExpiredLeaseIsTakenOverOnlyWithTheSameFingerprint() {
    IdempotentRequest request = request("k-takeover");
    String key = store.recordKey(request.scope(), request.key());
    store.claim(request, "owner-a", LEASE, RETENTION);
    String expiresAt = REDIS.client().hget(key, "expires_at");
    REDIS.client().hset(key, "lease_until", "1"); // the lease ran out long ago, the record lives on

    IdempotentRequest otherPayload = new IdempotentRequest(request.scope(), request.key(), fingerprint("{\"b\":2}"));
    ClaimResult refused = store.claim(otherPayload, "owner-b", LEASE, RETENTION);
    assertThat(refused.state()).isEqualTo(ClaimResult.State.IN_PROGRESS);
    assertThat(refused.fingerprint()).isEqualTo(request.fingerprint());
    assertThat(refused.leaseRemaining()).isZero();
    assertThat(REDIS.client().hget(key, "owner")).as("nothing changed").isEqualTo("owner-a");

    ClaimResult takeover = store.claim(request, "owner-b", LEASE, RETENTION);
    assertThat(takeover.state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(takeover.recovery()).isTrue();
    assertThat(REDIS.client().hget(key, "owner")).isEqualTo("owner-b");
    assertThat(Long.parseLong(REDIS.client().hget(key, "expires_at"))).isGreaterThanOrEqualTo(Long.parseLong(expiresAt));
    assertExpiryMatchesExpiresAt(key, RETENTION);

    ClaimResult renewed = store.claim(request, "owner-b", LEASE, RETENTION);
    assertThat(renewed.state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(renewed.recovery()).as("its own claim is no recovery").isFalse();
  }

  @Test
  void purgeDeletesAndCountsOnlyExpiredRecordsOfItsPrefix() {
    IdempotentRequest expired = request("k-expired");
    IdempotentRequest live = request("k-live");
    String expiredKey = store.recordKey(expired.scope(), expired.key());
    String liveKey = store.recordKey(live.scope(), live.key());
    store.claim(expired, "owner-a", LEASE, RETENTION);
    store.complete(expired.scope(), expired.key(), "owner-a", StoredResponse.of(201, "old"), RETENTION);
    expireByHand(expiredKey);
    store.claim(live, "owner-a", LEASE, RETENTION);
    // keys that match the record pattern but are not records are left alone
    String notAHash = REDIS.prefix() + "{" + "0".repeat(64) + "}";
    String foreignHash = REDIS.prefix() + "{" + "1".repeat(64) + "}";
    REDIS.client().set(notAHash, "x");
    REDIS.client().hset(foreignHash, "expires_at", "1");
    RedisLeaseStore otherPrefix = RedisLeaseStore.builder(REDIS.client()).keyPrefix(REDIS.prefix() + "glob*[x]?\\:").build();
    String otherExpired = otherPrefix.recordKey(expired.scope(), expired.key());
    otherPrefix.claim(expired, "owner-a", LEASE, RETENTION);
    expireByHand(otherExpired);

    assertThat(store.purgeExpired(1)).isEqualTo(1);
    assertThat(REDIS.client().exists(expiredKey)).isFalse();
    assertThat(REDIS.client().exists(liveKey)).isTrue();
    assertThat(REDIS.client().exists(notAHash)).isTrue();
    assertThat(REDIS.client().exists(foreignHash)).isTrue();
    assertThat(REDIS.client().exists(otherExpired)).as("another prefix (with glob characters) is another store").isTrue();
    assertThat(store.purgeExpired(100_000)).isZero();
    assertThat(otherPrefix.purgeExpired(10)).isEqualTo(1);

    assertThatThrownBy(() -> store.purgeExpired(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.purgeExpired(100_001)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theScriptsAreReloadedWhenTheServerForgetsThem() {
    IdempotentRequest request = request("k-noscript");
    assertThat(store.claim(request, "owner-a", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    REDIS.client().scriptFlush();
    assertThat(store.claim(request, "owner-a", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    REDIS.client().scriptFlush();
    assertThat(store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "ok"), RETENTION)).isTrue();
  }

  @Test
  void aCorruptResponseIsAStoreFailure() {
    IdempotentRequest request = request("k-corrupt-response");
    String key = store.recordKey(request.scope(), request.key());
    store.claim(request, "owner-a", LEASE, RETENTION);
    store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "ok"), RETENTION);
    REDIS.client().hset(key, "response", "garbage");

    assertThatThrownBy(() -> store.claim(request, "owner-b", LEASE, RETENTION))
        .isExactlyInstanceOf(StoredResponseUnreadableException.class) // an IdemStoreException that a retry cannot cure
        .hasMessageContaining(key)
        .hasMessageContaining("unreadable response");
  }

  @Test
  void aCorruptFingerprintOrStateIsAStoreFailure() {
    IdempotentRequest request = request("k-corrupt-fields");
    String key = store.recordKey(request.scope(), request.key());
    store.claim(request, "owner-a", LEASE, RETENTION);
    REDIS.client().hset(key, "fingerprint", "not-hex");
    assertThatThrownBy(() -> store.claim(request, "owner-b", LEASE, RETENTION))
        .isExactlyInstanceOf(IdemStoreException.class)
        .hasMessageContaining("corrupt fingerprint");

    REDIS.client().hset(key, "fingerprint", request.fingerprint().hex());
    REDIS.client().hdel(key, "state");
    assertThatThrownBy(() -> store.claim(request, "owner-b", LEASE, RETENTION))
        .isExactlyInstanceOf(IdemStoreException.class)
        .hasMessageContaining("not a valid idem record")
        .hasCauseInstanceOf(JedisDataException.class);
  }

  @Test
  void aKeyOfAnotherTypeIsAStoreFailure() {
    IdempotentRequest request = request("k-wrongtype");
    String key = store.recordKey(request.scope(), request.key());
    REDIS.client().set(key, "a string, not a hash");
    assertThatThrownBy(() -> store.claim(request, "owner-a", LEASE, RETENTION)).isExactlyInstanceOf(IdemStoreException.class);
    assertThatThrownBy(() -> store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "x"), RETENTION))
        .isExactlyInstanceOf(IdemStoreException.class);
    assertThatThrownBy(() -> store.release(request.scope(), request.key(), "owner-a")).isExactlyInstanceOf(IdemStoreException.class);
  }

  // ------------------------------------------------------------------ helpers

  /** Makes the record expired by its own expires_at while Redis keeps it (no TTL). */
  private static void expireByHand(String key) {
    REDIS.client().persist(key);
    REDIS.client().hset(key, "expires_at", "1");
  }

  private static void assertExpiryMatchesExpiresAt(String key, Duration retention) {
    List<?> reply = (List<?>) REDIS.client().eval(PTTL_AND_NOW_SCRIPT, List.of(key), List.of());
    long pttl = (Long) reply.get(0);
    long serverNow = (Long) reply.get(1);
    long expiresAt = Long.parseLong(REDIS.client().hget(key, "expires_at"));
    assertThat(pttl).isPositive().isLessThanOrEqualTo(retention.toMillis());
    assertThat(serverNow + pttl).as("PEXPIREAT is expires_at").isCloseTo(expiresAt, Offset.offset(2L));
  }

  private static IdempotentRequest request(String key) {
    return new IdempotentRequest(Scope.of("p-" + UUID.randomUUID(), "POST /charges"), IdempotencyKey.of(key), fingerprint("{}"));
  }

  private static Fingerprint fingerprint(String json) {
    return Fingerprint.ofJson(json.getBytes(StandardCharsets.UTF_8));
  }
}
