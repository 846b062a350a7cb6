package dev.idem.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.AttemptResult;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.ResponseProtection;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.ConnectionFactory;
import java.sql.Connection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * The upgrade rule between the two lease stores on one database: {@link JdbcLeaseStore} and
 * {@link R2dbcLeaseStore} on the same table read and write the same records, so a key stored by
 * either is replayed by the other (an application moved from JDBC to R2DBC runs no retried
 * request twice), a claim held through one is in progress for the other, and a key reused with
 * another request is refused across. Each database runs it by subclassing.
 */
abstract class RecordCompatibilityContract {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);
  /** A keyring shared by both stores (32 bytes of key material). */
  private static final ResponseProtection KEYRING = ResponseProtection.builder().key("k1", new byte[32]).currentKey("k1").build();

  private final AtomicInteger effects = new AtomicInteger();
  private ConnectionPool pool;
  private String principal;

  /** @return this class's database */
  protected abstract TestDatabase db();

  @BeforeEach
  void open() {
    pool = R2dbcTestDatabases.pool(db(), 4);
    principal = "p-" + UUID.randomUUID();
  }

  @AfterEach
  void close() {
    pool.dispose();
  }

  private JdbcLeaseStore jdbc(ResponseProtection protection) {
    // the default table, idem_keys, for both: what an application gets from either builder
    return JdbcLeaseStore.builder(db().target().dataSource()).responseProtection(protection).build();
  }

  private R2dbcLeaseStore r2dbc(ResponseProtection protection) {
    return R2dbcLeaseStore.builder(pool).responseProtection(protection).build();
  }

  private IdempotentRequest request(String key, String json) {
    return IdempotentRequest.ofJson(principal, "POST /payments", key, json.getBytes(StandardCharsets.UTF_8));
  }

  private static StoredResponse charged(String body) {
    return StoredResponse.builder(201).header("Location", "/payments/1").header("Content-Type", "application/json").body(body).build();
  }

  private AttemptResult viaR2dbc(R2dbcLeaseStore store, IdempotentRequest request, String body) throws Exception {
    return AsyncLeaseIdempotency.builder(store).build().attempt(request, ctx -> {
      effects.incrementAndGet();
      return CompletableFuture.completedFuture(charged(body));
    }).toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private AttemptResult viaJdbc(JdbcLeaseStore store, IdempotentRequest request, String body) {
    return LeaseIdempotency.builder(store).build().attempt(request, ctx -> {
      effects.incrementAndGet();
      return charged(body);
    });
  }

  /** The setup docs/reactive.md shows, without Spring Boot. */
  @Test
  void theDocumentedSetupExecutesOnceAndReplays() throws Exception {
    ConnectionFactory connectionFactory = pool;
    // tag::setup[]
    R2dbcLeaseStore store = R2dbcLeaseStore.builder(connectionFactory).build();
    AsyncLeaseIdempotency engine = AsyncLeaseIdempotency.builder(store).build();
    // end::setup[]
    IdempotentRequest request = request("k-docs", "{}");
    for (int i = 0; i < 2; i++) {
      engine.attempt(request, ctx -> {
        effects.incrementAndGet();
        return CompletableFuture.completedFuture(charged("{}"));
      }).toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
    assertThat(effects).hasValue(1);
  }

  @Test
  void aKeyStoredByTheJdbcStoreIsReplayedByTheR2dbcStore() throws Exception {
    IdempotentRequest request = request("k-jdbc-first", "{\"amount\":10}");
    assertThat(viaJdbc(jdbc(ResponseProtection.none()), request, "{\"id\":1}").kind()).isEqualTo(AttemptResult.Kind.EXECUTED);

    AttemptResult retry = viaR2dbc(r2dbc(ResponseProtection.none()), request, "{\"id\":2}");

    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(retry.outcomeOrThrow().response()).isEqualTo(charged("{\"id\":1}"));
    assertThat(effects).hasValue(1);
  }

  private AttemptResult viaR2dbcTransaction(ResponseProtection protection, IdempotentRequest request, String body) {
    R2dbcTransactionalIdempotency engine = R2dbcTransactionalIdempotency.builder(pool).responseProtection(protection).build();
    return engine.execute(R2dbcTransactions.of(pool), request, c -> Mono.fromSupplier(() -> {
      effects.incrementAndGet();
      return charged(body);
    })).block(Duration.ofSeconds(30));
  }

  private Outcome viaJdbcTransaction(ResponseProtection protection, IdempotentRequest request, String body) throws Exception {
    JdbcIdempotency engine = JdbcIdempotency.builder().responseProtection(protection).build();
    try (Connection c = db().target().dataSource().getConnection()) {
      return engine.execute(c, request, ctx -> {
        effects.incrementAndGet();
        return charged(body);
      });
    }
  }

  /** Transactional mode: a key that JDBC's engine stored is replayed by R2DBC's, with one keyring. */
  @Test
  void aKeyStoredByTheJdbcTransactionIsReplayedByTheR2dbcTransaction() throws Exception {
    IdempotentRequest request = request("k-jdbc-tx", "{\"amount\":10}");
    assertThat(viaJdbcTransaction(KEYRING, request, "{\"id\":1}").replayed()).isFalse();

    AttemptResult retry = viaR2dbcTransaction(KEYRING, request, "{\"id\":2}");

    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(retry.outcomeOrThrow().response()).isEqualTo(charged("{\"id\":1}"));
    assertThat(effects).hasValue(1);
  }

  /** Transactional mode: a key that R2DBC's engine stored is replayed by JDBC's, and by the R2DBC lease store. */
  @Test
  void aKeyStoredByTheR2dbcTransactionIsReplayedByTheJdbcTransactionAndTheLeaseStores() throws Exception {
    IdempotentRequest request = request("k-r2dbc-tx", "{\"amount\":10}");
    assertThat(viaR2dbcTransaction(KEYRING, request, "{\"id\":1}").kind()).isEqualTo(AttemptResult.Kind.EXECUTED);

    Outcome jdbcRetry = viaJdbcTransaction(KEYRING, request, "{\"id\":2}");
    AttemptResult leaseRetry = viaR2dbc(r2dbc(KEYRING), request, "{\"id\":3}");

    assertThat(jdbcRetry.replayed()).isTrue();
    assertThat(jdbcRetry.response()).isEqualTo(charged("{\"id\":1}"));
    assertThat(leaseRetry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(leaseRetry.outcomeOrThrow().response()).isEqualTo(charged("{\"id\":1}"));
    assertThat(effects).hasValue(1);
  }

  @Test
  void aKeyStoredByTheR2dbcStoreIsReplayedByTheJdbcStore() throws Exception {
    IdempotentRequest request = request("k-r2dbc-first", "{\"amount\":10}");
    assertThat(viaR2dbc(r2dbc(ResponseProtection.none()), request, "{\"id\":1}").kind()).isEqualTo(AttemptResult.Kind.EXECUTED);

    AttemptResult retry = viaJdbc(jdbc(ResponseProtection.none()), request, "{\"id\":2}");

    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(retry.outcomeOrThrow().response()).isEqualTo(charged("{\"id\":1}"));
    assertThat(effects).hasValue(1);
  }

  @Test
  void protectedResponsesAreReplayedAcrossWithOneKeyring() throws Exception {
    IdempotentRequest one = request("k-sealed-1", "{\"amount\":1}");
    IdempotentRequest two = request("k-sealed-2", "{\"amount\":2}");
    AttemptResult sealedByJdbc = viaJdbc(jdbc(KEYRING), one, "{\"id\":1}");
    AttemptResult sealedByR2dbc = viaR2dbc(r2dbc(KEYRING), two, "{\"id\":2}");
    assertThat(sealedByJdbc.kind()).as("%s", sealedByJdbc).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(sealedByR2dbc.kind()).as("%s %s", sealedByR2dbc, sealedByR2dbc.failure()).isEqualTo(AttemptResult.Kind.EXECUTED);

    Outcome fromJdbc = viaR2dbc(r2dbc(KEYRING), one, "again").outcomeOrThrow();
    Outcome fromR2dbc = viaJdbc(jdbc(KEYRING), two, "again").outcomeOrThrow();

    assertThat(fromJdbc.replayed()).isTrue();
    assertThat(fromJdbc.response()).isEqualTo(charged("{\"id\":1}"));
    assertThat(fromR2dbc.replayed()).isTrue();
    assertThat(fromR2dbc.response()).isEqualTo(charged("{\"id\":2}"));
    assertThat(effects).hasValue(2);
  }

  @Test
  void aClaimHeldThroughOneStoreIsInProgressForTheOther() throws Exception {
    JdbcLeaseStore jdbc = jdbc(ResponseProtection.none());
    R2dbcLeaseStore r2dbc = r2dbc(ResponseProtection.none());
    IdempotentRequest a = request("k-held-a", "{}");
    IdempotentRequest b = request("k-held-b", "{}");

    assertThat(jdbc.claim(a, "owner-jdbc", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(r2dbc.claimAsync(b, "owner-r2dbc", LEASE, RETENTION).toCompletableFuture().get(30, TimeUnit.SECONDS).state())
        .isEqualTo(ClaimResult.State.CLAIMED);

    ClaimResult seenByR2dbc = r2dbc.claimAsync(a, "owner-r2dbc", LEASE, RETENTION).toCompletableFuture().get(30, TimeUnit.SECONDS);
    ClaimResult seenByJdbc = jdbc.claim(b, "owner-jdbc", LEASE, RETENTION);

    assertThat(seenByR2dbc.state()).isEqualTo(ClaimResult.State.IN_PROGRESS);
    assertThat(seenByJdbc.state()).isEqualTo(ClaimResult.State.IN_PROGRESS);
    // the owner completes through the other store: fencing reads the same owner token
    assertThat(r2dbc.completeAsync(a.scope(), a.key(), "owner-jdbc", charged("x"), RETENTION).toCompletableFuture()
        .get(30, TimeUnit.SECONDS)).isTrue();
    assertThat(jdbc.complete(b.scope(), b.key(), "owner-r2dbc", charged("y"), RETENTION)).isTrue();
    assertThat(jdbc.claim(a, "owner-other", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.COMPLETED);
  }

  @Test
  void aKeyReusedWithAnotherBodyIsRefusedAcross() throws Exception {
    IdempotentRequest first = request("k-reused", "{\"amount\":10}");
    viaJdbc(jdbc(ResponseProtection.none()), first, "{\"id\":1}");

    AttemptResult other = viaR2dbc(r2dbc(ResponseProtection.none()), request("k-reused", "{\"amount\":99}"), "{\"id\":2}");

    assertThat(other.kind()).isEqualTo(AttemptResult.Kind.KEY_REUSED);
    assertThat(effects).hasValue(1);
  }
}
