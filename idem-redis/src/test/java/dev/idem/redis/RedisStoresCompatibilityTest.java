package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The upgrade rule between the two Redis stores: a key that the blocking store ({@link
 * RedisLeaseStore}, Jedis) holds is replayed, fenced and completed by the non-blocking one ({@link
 * AsyncRedisLeaseStore}, Lettuce) exactly as by itself, and the other way round, so an application
 * that moves from one to the other (a servlet application rewritten on WebFlux) never runs a
 * stored key again.
 */
class RedisStoresCompatibilityTest {

  @RegisterExtension static final RedisTestServer REDIS = new RedisTestServer();

  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  private final RedisLeaseStore blocking = REDIS.newStore();
  private final AsyncRedisLeaseStore async =
      AsyncRedisLeaseStore.builder(LettuceStoreClient.of(REDIS.lettuce())).keyPrefix(REDIS.prefix()).build();

  @Test
  void bothStoresNameARecordWithTheSameRedisKey() {
    IdempotentRequest request = request("{same}");
    assertThat(async.recordKey(request.scope(), request.key())).isEqualTo(blocking.recordKey(request.scope(), request.key()));
  }

  @Test
  void aKeyTheBlockingStoreCompletedIsReplayedByTheAsyncStoreNotRunAgain() throws Exception {
    IdempotentRequest request = request("blocking-first");
    assertThat(blocking.claim(request, "owner-a", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(blocking.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "charged"), RETENTION)).isTrue();

    ClaimResult replay = await(async.claimAsync(request, "owner-b", LEASE, RETENTION));
    assertThat(replay.state()).isEqualTo(ClaimResult.State.COMPLETED);
    assertThat(replay.response().status()).isEqualTo(201);
    assertThat(replay.response().bodyAsString()).isEqualTo("charged");
    assertThat(await(async.statusAsync(request.scope(), request.key()))).isInstanceOf(KeyStatus.Completed.class);
    // another body under the same key finds the stored record and its fingerprint (the engine's 422), never a claim
    ClaimResult other = await(async.claimAsync(withBody(request, "{\"amount\":2}"), "owner-c", LEASE, RETENTION));
    assertThat(other.state()).isEqualTo(ClaimResult.State.COMPLETED);
    assertThat(other.fingerprint()).isEqualTo(request.fingerprint());
  }

  @Test
  void aKeyTheAsyncStoreCompletedIsReplayedByTheBlockingStoreNotRunAgain() throws Exception {
    IdempotentRequest request = request("async-first");
    assertThat(await(async.claimAsync(request, "owner-a", LEASE, RETENTION)).state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(await(async.completeAsync(request.scope(), request.key(), "owner-a", StoredResponse.of(200, "done"), RETENTION))).isTrue();

    ClaimResult replay = blocking.claim(request, "owner-b", LEASE, RETENTION);
    assertThat(replay.state()).isEqualTo(ClaimResult.State.COMPLETED);
    assertThat(replay.response().bodyAsString()).isEqualTo("done");
    assertThat(blocking.status(request.scope(), request.key())).isInstanceOf(KeyStatus.Completed.class);
  }

  /** A claim held by one store fences the other: in progress for another owner, completed by its own owner token through either. */
  @Test
  void aClaimOfOneStoreIsInProgressForTheOtherAndItsOwnerCompletesItThroughEither() throws Exception {
    IdempotentRequest first = request("held-by-blocking");
    blocking.claim(first, "owner-a", LEASE, RETENTION);
    assertThat(await(async.claimAsync(first, "owner-b", LEASE, RETENTION)).state()).isEqualTo(ClaimResult.State.IN_PROGRESS);
    assertThat(await(async.completeAsync(first.scope(), first.key(), "owner-b", StoredResponse.of(200, "x"), RETENTION))).isFalse();
    assertThat(await(async.completeAsync(first.scope(), first.key(), "owner-a", StoredResponse.of(200, "mine"), RETENTION))).isTrue();
    assertThat(blocking.claim(first, "owner-c", LEASE, RETENTION).response().bodyAsString()).isEqualTo("mine");

    IdempotentRequest second = request("held-by-async");
    await(async.claimAsync(second, "owner-a", LEASE, RETENTION));
    assertThat(blocking.claim(second, "owner-b", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.IN_PROGRESS);
    assertThat(blocking.release(second.scope(), second.key(), "owner-b")).isFalse();
    assertThat(blocking.release(second.scope(), second.key(), "owner-a")).isTrue();
    assertThat(await(async.claimAsync(second, "owner-b", LEASE, RETENTION)).state()).isEqualTo(ClaimResult.State.CLAIMED);
  }

  /** With response protection on both, each opens what the other sealed. */
  @Test
  void aProtectedResponseSealedByOneStoreIsOpenedByTheOther() throws Exception {
    byte[] key = new byte[ResponseProtection.KEY_BYTES];
    java.util.Arrays.fill(key, (byte) 7);
    ResponseProtection keys = ResponseProtection.builder().key("a", key).currentKey("a").build();
    RedisLeaseStore sealedBlocking = RedisLeaseStore.builder(REDIS.client()).keyPrefix(REDIS.prefix()).responseProtection(keys).build();
    AsyncRedisLeaseStore sealedAsync = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(REDIS.lettuce()))
        .keyPrefix(REDIS.prefix()).responseProtection(keys).build();

    IdempotentRequest one = request("sealed-by-blocking");
    sealedBlocking.claim(one, "owner-a", LEASE, RETENTION);
    sealedBlocking.complete(one.scope(), one.key(), "owner-a", StoredResponse.of(201, "secret"), RETENTION);
    assertThat(await(sealedAsync.claimAsync(one, "owner-b", LEASE, RETENTION)).response().bodyAsString()).isEqualTo("secret");
    assertThat(await(sealedAsync.completeAsync(one.scope(), one.key(), "owner-a", StoredResponse.of(201, "secret"), RETENTION)))
        .as("the same owner's repeated completion, recognised by opening the sealed response").isTrue();

    IdempotentRequest two = request("sealed-by-async");
    await(sealedAsync.claimAsync(two, "owner-a", LEASE, RETENTION));
    await(sealedAsync.completeAsync(two.scope(), two.key(), "owner-a", StoredResponse.of(201, "secret too"), RETENTION));
    assertThat(RawResponses.read(REDIS.client(), blocking.recordKey(two.scope(), two.key())))
        .satisfies(raw -> assertThat(ResponseProtection.isProtected(raw)).isTrue());
    assertThat(sealedBlocking.claim(two, "owner-b", LEASE, RETENTION).response().bodyAsString()).isEqualTo("secret too");
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static IdempotentRequest request(String key) {
    return new IdempotentRequest(Scope.of("alice", "POST /payments"), IdempotencyKey.of(key + "-" + UUID.randomUUID()),
        Fingerprint.ofJson("{\"amount\":1}".getBytes(StandardCharsets.UTF_8)));
  }

  private static IdempotentRequest withBody(IdempotentRequest request, String json) {
    return new IdempotentRequest(request.scope(), request.key(), Fingerprint.ofJson(json.getBytes(StandardCharsets.UTF_8)));
  }
}
