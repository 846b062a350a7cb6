package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.AttemptResult;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.AsyncLeaseStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.support.AsyncConnectionPoolSupport;
import io.lettuce.core.support.AsyncPool;
import io.lettuce.core.support.BoundedPoolConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link RedisDurability} on the non-blocking store, on the standalone server of {@link
 * RedisTestServer}, which has no replica: a write that asks for one is never acknowledged, so it
 * must be an unknown outcome (never a success), as on the blocking store ({@link
 * RedisDurableWritesTest} shows the same on a cluster with a frozen replica). The waiting runs on
 * a pooled connection of its own, so the shared connection does not stall behind it; a store with
 * durability on a client without such connections is refused when it is built.
 */
class AsyncRedisDurabilityTest {

  @RegisterExtension static final RedisTestServer REDIS = new RedisTestServer();

  private static final Duration LEASE = Duration.ofSeconds(20);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  @BeforeAll
  static void theServerHasNoReplica() {
    String replication = REDIS.client().info("replication");
    Assumptions.assumeTrue(replication.contains("connected_slaves:0"),
        "these tests need a server without replicas, so that WAIT 1 is never acknowledged: " + replication);
  }

  @Test
  void durabilityOnASharedConnectionIsRefusedWhenTheStoreIsBuilt() {
    assertThatThrownBy(() -> AsyncRedisLeaseStore.builder(LettuceStoreClient.of(REDIS.lettuce()))
            .durability(RedisDurability.replicas(1, Duration.ofMillis(200))).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("needs a client whose waiting writes have connections of their own")
        .hasMessageContaining("WAIT would hold every command queued behind it");
  }

  @Test
  void aClaimNoReplicaAcknowledgedIsAnUnknownOutcomeAndTheEffectDoesNotRun() throws Exception {
    AsyncRedisLeaseStore store = durable(RedisDurability.replicas(1, Duration.ofMillis(200)));
    AtomicInteger effects = new AtomicInteger();
    AttemptResult result = AsyncLeaseIdempotency.builder(store).lease(LEASE).build()
        .attempt(request(), ctx -> {
          effects.incrementAndGet();
          return CompletableFuture.completedFuture(StoredResponse.of(201, "created"));
        }).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.STORE_UNAVAILABLE);
    assertThat(result.failure()).get().isInstanceOf(IdemStoreException.class).extracting(Throwable::getMessage).asString()
        .contains("acknowledged by 0 of 1 replicas").contains("outcome is unknown");
    assertThat(effects).as("effects run without an acknowledged claim").hasValue(0);
  }

  /** Each write waits, the repeated completion and the replay too: nothing is answered from a record a failover may lose. */
  @Test
  void everyWriteAndEveryReplayWaitsForTheReplicas() throws Exception {
    IdempotentRequest request = request();
    AsyncRedisLeaseStore plain = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(REDIS.lettuce())).keyPrefix(REDIS.prefix()).build();
    AsyncRedisLeaseStore store = durable(RedisDurability.replicas(1, Duration.ofMillis(100)));
    assertThat(plain.claimAsync(request, "owner-a", LEASE, RETENTION).toCompletableFuture().get(10, TimeUnit.SECONDS).state())
        .isEqualTo(ClaimResult.State.CLAIMED);
    assertUnknown(store.completeAsync(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "created"), RETENTION));
    assertThat(plain.claimAsync(request, "owner-b", LEASE, RETENTION).toCompletableFuture().get(10, TimeUnit.SECONDS).state())
        .as("the completion did reach the master").isEqualTo(ClaimResult.State.COMPLETED);
    assertUnknown(store.completeAsync(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "created"), RETENTION));
    assertUnknown(store.claimAsync(request, "owner-b", LEASE, RETENTION));
    assertUnknown(store.releaseAsync(request.scope(), request.key(), "owner-a"));
  }

  @Test
  void replicasAndAofNeedsWaitaofAndSaysSoOnAnOlderServer() throws Exception {
    AsyncRedisLeaseStore store = durable(RedisDurability.replicasAndAof(1, Duration.ofMillis(200)));
    String version = REDIS.client().info("server").replaceAll("(?s).*redis_version:([0-9]+)\\.([0-9]+).*", "$1 $2");
    String[] v = version.split(" ");
    boolean hasWaitaof = Integer.parseInt(v[0]) > 7 || (Integer.parseInt(v[0]) == 7 && Integer.parseInt(v[1]) >= 2);
    CompletableFuture<ClaimResult> claim = store.claimAsync(request(), "owner-a", LEASE, RETENTION).toCompletableFuture();
    assertThatThrownBy(() -> claim.get(10, TimeUnit.SECONDS)).cause().isInstanceOf(IdemStoreException.class)
        .hasMessageContaining(hasWaitaof ? "outcome is unknown" : "WAITAOF needs Redis 7.2 or later");
  }

  /**
   * While a durable write waits the whole WAIT timeout on its pooled connection, the store's reads
   * and writes that wait for nothing go on over the shared connection without stalling.
   */
  @Test
  void aWaitingWriteDoesNotStallTheSharedConnection() throws Exception {
    AsyncRedisLeaseStore store = durable(RedisDurability.replicas(1, Duration.ofMillis(2000)));
    AsyncRedisLeaseStore plain = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(REDIS.lettuce())).keyPrefix(REDIS.prefix()).build();
    long started = System.nanoTime();
    CompletableFuture<ClaimResult> waiting = store.claimAsync(request(), "owner-a", LEASE, RETENTION).toCompletableFuture();
    Thread.sleep(100); // the script and WAIT are on their connection
    for (int i = 0; i < 5; i++) {
      plain.claimAsync(request(), "owner-b", LEASE, RETENTION).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
    long sharedDone = System.nanoTime() - started;
    assertThat(waiting).as("still waiting for its replica").isNotDone();
    assertThat(Duration.ofNanos(sharedDone)).isLessThan(Duration.ofMillis(1500));
    assertThatThrownBy(() -> waiting.get(10, TimeUnit.SECONDS)).cause().hasMessageContaining("acknowledged by 0 of 1 replicas");
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isGreaterThanOrEqualTo(Duration.ofMillis(2000));
  }

  /** The setup docs/reactive.md shows: the store on Lettuce's shared connection, and durable writes on a pool of their own. */
  @Test
  void theSetupTheDocsShow() throws Exception {
    RedisClient lettuce = REDIS.lettuceClient();
    RedisURI uri = RedisURI.create(REDIS.url());
    String prefix = REDIS.prefix();
    // tag::lettuce[]
    StatefulRedisConnection<byte[], byte[]> shared = lettuce.connect(ByteArrayCodec.INSTANCE);
    AsyncLeaseStore store = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(shared)).keyPrefix(prefix).build();

    // durable writes: WAIT runs on connections of their own, so that it never holds the shared one
    AsyncPool<StatefulRedisConnection<byte[], byte[]>> waiting = AsyncConnectionPoolSupport.createBoundedObjectPool(
        () -> lettuce.connectAsync(ByteArrayCodec.INSTANCE, uri), BoundedPoolConfig.builder().maxTotal(16).build());
    AsyncLeaseStore durable = AsyncRedisLeaseStore.builder(LettuceStoreClient.of(shared, waiting)).keyPrefix(prefix)
        .durability(RedisDurability.replicas(1, Duration.ofSeconds(1)))
        .build();
    // end::lettuce[]
    try {
      assertThat(store.claimAsync(request(), "owner-a", LEASE, RETENTION).toCompletableFuture().get(10, TimeUnit.SECONDS).state())
          .isEqualTo(ClaimResult.State.CLAIMED);
      assertUnknown(durable.claimAsync(request(), "owner-a", LEASE, RETENTION)); // this server has no replica
    } finally {
      waiting.close();
      shared.close();
    }
  }

  private static AsyncRedisLeaseStore durable(RedisDurability durability) {
    return AsyncRedisLeaseStore.builder(LettuceStoreClient.of(REDIS.lettuce(), REDIS.lettucePool(4)))
        .keyPrefix(REDIS.prefix()).durability(durability).build();
  }

  private static void assertUnknown(java.util.concurrent.CompletionStage<?> stage) {
    assertThatThrownBy(() -> stage.toCompletableFuture().get(10, TimeUnit.SECONDS)).cause()
        .isInstanceOf(IdemStoreException.class).hasMessageContaining("acknowledged by 0 of 1 replicas");
  }

  private static IdempotentRequest request() {
    return new IdempotentRequest(Scope.of("alice", "POST /payments"), IdempotencyKey.of(UUID.randomUUID().toString()),
        Fingerprint.ofJson("{\"amount\":1}".getBytes(StandardCharsets.UTF_8)));
  }
}
