package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.testclusters.RedisClusterProcesses;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * {@link RedisDurability} on a real Redis Cluster (the test run's own, {@link
 * RedisClusterTestServer}): a replica that does not acknowledge (frozen with SIGSTOP, a process the
 * test run started) turns a write into an unknown outcome, never a success.
 */
class RedisDurableWritesTest {

  @RegisterExtension static final RedisClusterTestServer REDIS = RedisClusterTestServer.shared();

  private static final Duration LEASE = Duration.ofSeconds(20);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  @Test
  void aClaimNoReplicaAcknowledgedIsAnUnknownOutcomeAndTheEffectDoesNotRun() {
    RedisLeaseStore store = REDIS.newStore(RedisDurability.replicas(1, Duration.ofMillis(100)));
    IdempotentRequest request = request();
    int replica = replicaOf(store, request);
    AtomicInteger effects = new AtomicInteger();
    REDIS.cluster().freeze(replica);
    try {
      assertThatThrownBy(() -> LeaseIdempotency.builder(store).lease(LEASE).build()
          .execute(request, ctx -> {
            effects.incrementAndGet();
            return StoredResponse.of(201, "created");
          }))
          .isInstanceOf(IdemStoreException.class)
          .hasMessageContaining("acknowledged by 0 of 1 replicas")
          .hasMessageContaining("outcome is unknown");
    } finally {
      REDIS.cluster().thaw(replica);
    }
    assertThat(effects).as("effects run without an acknowledged claim").hasValue(0);
    REDIS.cluster().awaitHealthy(30_000);
  }

  @Test
  void aCompletionTheReplicaDidNotAcknowledgeIsRepeatedWithTheSameOwnerTokenUntilItIs() throws Exception {
    CountingStore store = new CountingStore(REDIS.newStore(RedisDurability.replicas(1, Duration.ofMillis(100))));
    IdempotentRequest request = request();
    int replica = replicaOf(store.delegate, request);
    Thread thaw = new Thread(() -> {
      sleep(800);
      REDIS.cluster().thaw(replica);
    });
    Outcome outcome;
    try {
      outcome = LeaseIdempotency.builder(store).lease(LEASE).build().execute(request, ctx -> {
        REDIS.cluster().freeze(replica); // after the acknowledged claim, before the completion
        thaw.start();
        return StoredResponse.of(201, "created");
      });
    } finally {
      thaw.join();
    }
    assertThat(outcome.stored()).isTrue();
    assertThat(store.completeFailures.get()).as("completions reported unknown while the replica was frozen").isPositive();
    assertThat(store.owners).as("owner tokens used to complete").hasSize(1);
    ClaimResult replay = store.claim(request, "someone-else", LEASE, RETENTION);
    assertThat(replay.state()).isEqualTo(ClaimResult.State.COMPLETED);
    assertThat(replay.response().bodyAsString()).isEqualTo("created");
    REDIS.cluster().awaitHealthy(30_000);
  }

  @Test
  void aCompletionNeverAcknowledgedWithinTheLeaseIsOutcomeUnknownNeverSuccess() throws Exception {
    RedisLeaseStore store = REDIS.newStore(RedisDurability.replicas(1, Duration.ofMillis(100)));
    IdempotentRequest request = request();
    int replica = replicaOf(store, request);
    try {
      assertThatThrownBy(() -> LeaseIdempotency.builder(store).lease(Duration.ofMillis(800)).build()
          .execute(request, ctx -> {
            REDIS.cluster().freeze(replica);
            return StoredResponse.of(201, "created");
          }))
          .isInstanceOf(OutcomeUnknownException.class);
      // A replay needs an acknowledgement as well, also over a connection that wrote nothing:
      // nothing is answered from a record a failover may lose.
      try (RedisClusterClient other = REDIS.newClient(5000)) {
        RedisLeaseStore elsewhere = RedisLeaseStore.builder(other).keyPrefix(REDIS.prefix())
            .durability(RedisDurability.replicas(1, Duration.ofMillis(100))).build();
        assertThatThrownBy(() -> elsewhere.claim(request, "someone-else", LEASE, RETENTION))
            .isInstanceOf(IdemStoreException.class).hasMessageContaining("acknowledged by 0 of 1 replicas");
      }
    } finally {
      REDIS.cluster().thaw(replica);
    }
    REDIS.cluster().awaitHealthy(30_000);
    assertThat(store.claim(request, "someone-else", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.COMPLETED);
  }

  @Test
  void replicasAndAofNeedsWaitaofAndSaysSoOnAnOlderServer() {
    RedisLeaseStore store = REDIS.newStore(RedisDurability.replicasAndAof(1, Duration.ofSeconds(2)));
    IdempotentRequest request = request();
    String version = REDIS.cluster().serverVersion(); // "Redis server v=7.0.15 ..."
    String[] v = version.replaceAll(".*v=([0-9]+)\\.([0-9]+).*", "$1 $2").split(" ");
    boolean hasWaitaof = Integer.parseInt(v[0]) > 7 || (Integer.parseInt(v[0]) == 7 && Integer.parseInt(v[1]) >= 2);
    if (hasWaitaof) {
      assertThat(store.claim(request, "owner-a", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    } else {
      assertThatThrownBy(() -> store.claim(request, "owner-a", LEASE, RETENTION))
          .isInstanceOf(IdemStoreException.class)
          .hasMessageContaining("WAITAOF needs Redis 7.2 or later");
    }
  }

  @Test
  void aRepeatedCompletionIsAcknowledgedAgainNotAnsweredFromAnUnacknowledgedRecord() {
    RedisLeaseStore store = REDIS.newStore(RedisDurability.replicas(1, Duration.ofMillis(100)));
    IdempotentRequest request = request();
    int replica = replicaOf(store, request);
    assertThat(store.claim(request, "owner-a", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    REDIS.cluster().freeze(replica);
    try {
      StoredResponse response = StoredResponse.of(201, "created");
      assertThatThrownBy(() -> store.complete(request.scope(), request.key(), "owner-a", response, RETENTION))
          .isInstanceOf(IdemStoreException.class);
      // The record is completed on the master; the repetition (over another connection, which has
      // written nothing the replica lacks) finds it but must still wait for the replica.
      try (RedisClusterClient other = REDIS.newClient(5000)) {
        RedisLeaseStore elsewhere = RedisLeaseStore.builder(other).keyPrefix(REDIS.prefix())
            .durability(RedisDurability.replicas(1, Duration.ofMillis(100))).build();
        assertThatThrownBy(() -> elsewhere.complete(request.scope(), request.key(), "owner-a", response, RETENTION))
            .isInstanceOf(IdemStoreException.class).hasMessageContaining("acknowledged by 0 of 1 replicas");
      }
    } finally {
      REDIS.cluster().thaw(replica);
    }
    REDIS.cluster().awaitHealthy(30_000);
    assertThat(store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "created"), RETENTION)).isTrue();
  }

  /** @return the port of the replica of the master that holds the request's record */
  private static int replicaOf(RedisLeaseStore store, IdempotentRequest request) {
    String recordKey = store.recordKey(request.scope(), request.key());
    RedisClusterProcesses cluster = REDIS.cluster();
    String slot = Integer.toString(JedisClusterCRC16.getSlot(recordKey));
    for (int master : cluster.masters()) {
      String count = cluster.command(master, "CLUSTER", "COUNTKEYSINSLOT", slot);
      String nodes = cluster.command(master, "CLUSTER", "NODES");
      for (String line : nodes.split("\n")) {
        if (line.contains("myself") && line.contains("master") && ownsSlot(line, Integer.parseInt(slot))) {
          List<Integer> replicas = cluster.replicasOf(master);
          assertThat(replicas).as("replicas of %s (%s keys in slot)", master, count).hasSize(1);
          return replicas.get(0);
        }
      }
    }
    throw new AssertionError("no master owns slot " + slot);
  }

  private static boolean ownsSlot(String nodesLine, int slot) {
    String[] fields = nodesLine.trim().split(" ");
    for (int i = 8; i < fields.length; i++) {
      String range = fields[i];
      if (range.startsWith("[")) {
        continue;
      }
      String[] ends = range.split("-");
      int from = Integer.parseInt(ends[0]);
      int to = ends.length > 1 ? Integer.parseInt(ends[1]) : from;
      if (slot >= from && slot <= to) {
        return true;
      }
    }
    return false;
  }

  private static IdempotentRequest request() {
    return new IdempotentRequest(Scope.of("alice", "POST /payments"), IdempotencyKey.of(UUID.randomUUID().toString()),
        Fingerprint.ofJson("{\"amount\":1}".getBytes(StandardCharsets.UTF_8)));
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Counts the completions that failed and the owner tokens used. */
  private static final class CountingStore implements LeaseStore {
    final RedisLeaseStore delegate;
    final AtomicInteger completeFailures = new AtomicInteger();
    final Set<String> owners = ConcurrentHashMap.newKeySet();

    CountingStore(RedisLeaseStore delegate) {
      this.delegate = delegate;
    }

    @Override
    public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
      return delegate.claim(request, ownerToken, lease, retention);
    }

    @Override
    public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
      owners.add(ownerToken);
      try {
        return delegate.complete(scope, key, ownerToken, response, retention);
      } catch (IdemStoreException e) {
        completeFailures.incrementAndGet();
        throw e;
      }
    }

    @Override
    public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
      return delegate.release(scope, key, ownerToken);
    }

    @Override
    public long purgeExpired(int batchSize) {
      return delegate.purgeExpired(batchSize);
    }
  }
}
