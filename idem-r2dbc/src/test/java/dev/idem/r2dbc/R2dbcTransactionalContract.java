package dev.idem.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.Result;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Transactional mode on R2DBC ({@link R2dbcTransactionalIdempotency}): the effect's writes, the key
 * and the stored answer commit together or not at all. Every test counts the effect's rows with
 * SQL and reads the key's record back, not only the results. Each database runs it by subclassing;
 * each test has its own key table and effect table, dropped after it. BlockHound (installed for
 * the module's tests) fails any blocking call made on the driver's event loops.
 */
abstract class R2dbcTransactionalContract {

  private static final Duration WAIT = Duration.ofSeconds(30);

  private ConnectionPool pool;
  private String keys;
  private String effects;
  private R2dbcTransactionalIdempotency idem;
  private R2dbcTransactions transactions;

  /** @return this class's database */
  protected abstract TestDatabase db();

  @BeforeEach
  void open() {
    pool = R2dbcTestDatabases.pool(db(), 20);
    String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    keys = "tx_keys_" + suffix;
    effects = "tx_effects_" + suffix;
    sql("CREATE TABLE " + effects + " (id VARCHAR(64) PRIMARY KEY, note VARCHAR(200))");
    idem = R2dbcTransactionalIdempotency.builder(pool).table(keys).retention(Duration.ofHours(1)).build();
    transactions = R2dbcTransactions.of(pool);
  }

  @AfterEach
  void close() {
    try {
      sql("DROP TABLE IF EXISTS " + effects);
      sql("DROP TABLE IF EXISTS " + keys);
    } finally {
      pool.dispose();
    }
  }

  @Test
  void aLostResponseIsReplayedAndTheEffectRunsOnce() {
    IdempotentRequest request = request("{\"text\":\"hello\"}");
    AttemptResult first = execute(request, insert("a", 201, "created a"));
    AttemptResult retry = execute(request, insert("a", 201, "created again"));

    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(retry.outcome().orElseThrow().response().status()).isEqualTo(201);
    assertThat(retry.outcome().orElseThrow().response().bodyAsString()).isEqualTo("created a");
    assertThat(count(effects)).isEqualTo(1);
    assertThat(count(keys)).isEqualTo(1);
  }

  @Test
  void tenConcurrentDuplicatesRunTheEffectOnce() {
    IdempotentRequest request = request("{\"text\":\"race\"}");
    AtomicInteger runs = new AtomicInteger();
    Function<Connection, Mono<StoredResponse>> slow = c -> {
      runs.incrementAndGet();
      return insert("race", 201, "created").apply(c).delayElement(Duration.ofMillis(300));
    };
    R2dbcTransactionalIdempotency waiting = R2dbcTransactionalIdempotency.builder(pool).table(keys)
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(20))).build();
    List<AttemptResult> results = Flux.range(0, 10)
        .flatMap(i -> waiting.execute(transactions, request, slow).subscribeOn(Schedulers.parallel()))
        .collectList()
        .block(WAIT);

    assertThat(runs).hasValue(1);
    assertThat(results).extracting(AttemptResult::kind)
        .containsOnly(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED)
        .filteredOn(kind -> kind == AttemptResult.Kind.EXECUTED).hasSize(1);
    assertThat(results).allSatisfy(r -> assertThat(r.outcome().orElseThrow().response().bodyAsString()).isEqualTo("created"));
    assertThat(count(effects)).isEqualTo(1);
  }

  /** Fail-fast (the default): duplicates of a running attempt are answered "in progress" at once, then replayed. */
  @Test
  void duplicatesOfARunningAttemptAreInProgressThenReplayed() throws Exception {
    IdempotentRequest request = request("{\"text\":\"busy\"}");
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch inEffect = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Function<Connection, Mono<StoredResponse>> held = c -> {
      runs.incrementAndGet();
      return insert("busy", 201, "created").apply(c)
          .doOnNext(written -> inEffect.countDown())
          .flatMap(response -> Mono.fromCallable(() -> release.await(30, TimeUnit.SECONDS))
              .subscribeOn(Schedulers.boundedElastic())
              .thenReturn(response));
    };
    Mono<AttemptResult> first = idem.execute(transactions, request, held).cache();
    first.subscribe();
    assertThat(inEffect.await(30, TimeUnit.SECONDS)).isTrue();

    List<AttemptResult> duplicates = Flux.range(0, 5)
        .flatMap(i -> idem.execute(transactions, request, insert("busy", 201, "again")))
        .collectList()
        .block(WAIT);
    release.countDown();

    assertThat(duplicates).extracting(AttemptResult::kind).containsOnly(AttemptResult.Kind.IN_PROGRESS);
    assertThat(duplicates).allSatisfy(d -> assertThat(d.retryAfter()).isPositive());
    assertThat(first.block(WAIT).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(execute(request, insert("busy", 201, "later")).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(runs).hasValue(1);
    assertThat(count(effects)).isEqualTo(1);
  }

  /** The claim's short lock wait is the claim's only: the effect's statements run with the session's own. */
  @Test
  void theEffectRunsWithTheSessionsLockWaitNotTheClaims() {
    String show = idem.dialect().abortsTransactionOnError() ? "SHOW lock_timeout" : "SELECT @@innodb_lock_wait_timeout";
    String before = Mono.usingWhen(pool.create(), c -> firstColumn(c, show), Connection::close).block(WAIT);
    AttemptResult result = execute(request("{\"text\":\"wait\"}"),
        c -> firstColumn(c, show).map(seen -> StoredResponse.of(201, seen)));

    assertThat(result.outcome().orElseThrow().response().bodyAsString()).isEqualTo(before);
  }

  private static Mono<String> firstColumn(Connection c, String query) {
    return Flux.from(c.createStatement(query).execute())
        .concatMap(r -> r.map((row, meta) -> String.valueOf(row.get(0))))
        .next();
  }

  @Test
  void tenConcurrentDistinctKeysEachRunOnce() {
    List<AttemptResult> results = Flux.range(0, 10)
        .flatMap(i -> idem.execute(transactions, request("{\"n\":" + i + "}"), insert("k" + i, 201, "ok " + i))
            .subscribeOn(Schedulers.parallel()))
        .collectList()
        .block(WAIT);

    assertThat(results).extracting(AttemptResult::kind).containsOnly(AttemptResult.Kind.EXECUTED);
    assertThat(count(effects)).isEqualTo(10);
    assertThat(count(keys)).isEqualTo(10);
  }

  @Test
  void aKeyReusedWithAnotherPayloadIsRefused() {
    IdempotencyKey key = IdempotencyKey.of(UUID.randomUUID().toString());
    execute(request(key, "{\"amount\":1}"), insert("first", 201, "one"));
    AttemptResult other = execute(request(key, "{\"amount\":2}"), insert("second", 201, "two"));

    assertThat(other.kind()).isEqualTo(AttemptResult.Kind.KEY_REUSED);
    assertThat(count(effects)).isEqualTo(1);
  }

  @Test
  void aCaughtConstraintViolationIsAnsweredStoredAndReplayed() {
    sql("INSERT INTO " + effects + " (id, note) VALUES ('taken', 'before')");
    IdempotentRequest request = request("{\"id\":\"taken\"}");
    AtomicInteger runs = new AtomicInteger();
    Function<Connection, Mono<StoredResponse>> conflictAnswered = c -> {
      runs.incrementAndGet();
      return insert("taken", 201, "created").apply(c)
          .onErrorResume(R2dbcException.class, e -> Mono.just(StoredResponse.of(409, "already exists")));
    };
    AttemptResult first = execute(request, conflictAnswered);
    AttemptResult retry = execute(request, conflictAnswered);

    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(first.outcome().orElseThrow().response().status()).isEqualTo(409);
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(retry.outcome().orElseThrow().response().bodyAsString()).isEqualTo("already exists");
    assertThat(runs).hasValue(1);
    assertThat(count(effects)).isEqualTo(1);
  }

  @Test
  void aSuccessAnsweredAfterACaughtSqlErrorIsNeverStoredWithoutItsWrites() {
    sql("INSERT INTO " + effects + " (id, note) VALUES ('taken', 'before')");
    IdempotentRequest request = request("{\"id\":\"taken\"}");
    AttemptResult result = execute(request, c -> insert("taken", 201, "x").apply(c)
        .onErrorResume(R2dbcException.class, e -> Mono.just(StoredResponse.of(201, "created anyway"))));

    if (idem.dialect().abortsTransactionOnError()) {
      // PostgreSQL: the caught error aborted the transaction; a success would describe no write
      assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
      assertThat(count(keys)).isZero();
    } else {
      // MySQL: a failed statement leaves the transaction as it was; the answer is the effect's to give
      assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(count(keys)).isEqualTo(1);
    }
    assertThat(count(effects)).isEqualTo(1);
  }

  @Test
  void anSqlErrorTheEffectDoesNotCatchRollsEverythingBack() {
    sql("INSERT INTO " + effects + " (id, note) VALUES ('taken', 'before')");
    IdempotentRequest request = request("{\"id\":\"taken\"}");
    assertThatThrownBy(() -> execute(request, c -> insert("fresh", 201, "x").apply(c)
        .then(insert("taken", 201, "x").apply(c)))).isInstanceOf(R2dbcException.class);
    assertThat(count(effects)).isEqualTo(1);
    assertThat(count(keys)).isZero();
  }

  @Test
  void aServerErrorIsReleasedWithItsWritesAndTheRetryRuns() {
    IdempotentRequest request = request("{\"text\":\"flaky\"}");
    AttemptResult failed = execute(request, insert("flaky", 503, "try later"));

    assertThat(failed.kind()).isEqualTo(AttemptResult.Kind.RELEASED);
    assertThat(failed.outcome().orElseThrow().response().status()).isEqualTo(503);
    assertThat(count(effects)).isZero();
    assertThat(count(keys)).isZero();

    AttemptResult retry = execute(request, insert("flaky", 201, "created"));
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(count(effects)).isEqualTo(1);
  }

  @Test
  void anEffectsErrorRollsBackItsWritesAndTheClaim() {
    IdempotentRequest request = request("{\"text\":\"boom\"}");
    Function<Connection, Mono<StoredResponse>> failing = c -> insert("boom", 201, "x").apply(c)
        .then(Mono.error(new IllegalStateException("the handler failed")));

    assertThatThrownBy(() -> execute(request, failing)).hasMessageContaining("the handler failed");
    assertThat(count(effects)).isZero();
    assertThat(count(keys)).isZero();
    assertThat(execute(request, insert("boom", 201, "ok")).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
  }

  @Test
  void anEffectThatCompletesEmptyIsAnErrorAndLeavesNothing() {
    IdempotentRequest request = request("{\"text\":\"empty\"}");
    assertThatThrownBy(() -> execute(request, c -> insert("empty", 201, "x").apply(c).then(Mono.empty())))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("without a response");
    assertThat(count(effects)).isZero();
    assertThat(count(keys)).isZero();
  }

  @Test
  void aCommitThatFailsLeavesTheOutcomeUnknownAndTheRetrySafe() {
    IdempotentRequest request = request("{\"text\":\"commit\"}");
    R2dbcTransactions commitLost = new R2dbcTransactions() {
      @Override
      public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
        // the work runs, then its transaction rolls back and the caller hears of a failed commit
        return transactions.inTransaction(work, value -> false)
            .then(Mono.error(new IllegalStateException("connection reset during COMMIT")));
      }
    };
    AttemptResult lost = idem.execute(commitLost, request, insert("commit", 201, "created")).block(WAIT);

    assertThat(lost.kind()).isEqualTo(AttemptResult.Kind.OUTCOME_UNKNOWN);
    assertThat(count(effects)).isZero();
    AttemptResult retry = execute(request, insert("commit", 201, "created"));
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(count(effects)).isEqualTo(1);
  }

  @Test
  void aCancelledAttemptRollsBackAndTheRetryRunsOnce() throws Exception {
    IdempotentRequest request = request("{\"text\":\"cancel\"}");
    CountDownLatch inEffect = new CountDownLatch(1);
    Disposable running = idem.execute(transactions, request, c -> insert("cancel", 201, "x").apply(c)
            .doOnNext(written -> inEffect.countDown())
            .delayElement(Duration.ofSeconds(30)))
        .subscribe();
    assertThat(inEffect.await(30, TimeUnit.SECONDS)).isTrue();
    running.dispose(); // the client went away while the effect ran

    AttemptResult retry = execute(request, insert("cancel", 201, "created"));
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(count(effects)).isEqualTo(1);
    assertThat(count(keys)).isEqualTo(1);
  }

  @Test
  void theCallersTransactionKeepsItsOwnWritesOnlyWithTheKey() {
    IdempotentRequest request = request("{\"text\":\"joined\"}");
    AttemptResult result = transactions.inTransaction(
            c -> idem.attempt(c, request, insert("joined", 201, "created")),
            r -> r.kind() == AttemptResult.Kind.EXECUTED)
        .block(WAIT);
    AttemptResult replay = transactions.inTransaction(
            c -> idem.attempt(c, request, insert("joined", 201, "again")), r -> true)
        .block(WAIT);

    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(replay.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(count(effects)).isEqualTo(1);
  }

  @Test
  void anExpiredRecordIsTakenOverByANewAttempt() {
    IdempotentRequest request = request("{\"text\":\"expired\"}");
    execute(request, insert("expired-1", 201, "first"));
    sql("UPDATE " + keys + " SET expires_at = 0");

    AttemptResult again = execute(request, insert("expired-2", 201, "second"));
    assertThat(again.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(again.outcome().orElseThrow().response().bodyAsString()).isEqualTo("second");
    assertThat(count(effects)).isEqualTo(2);
    assertThat(count(keys)).isEqualTo(1);
  }

  @Test
  void aLeaseModeClaimSharingTheTableIsInProgress() {
    IdempotentRequest request = request("{\"text\":\"lease\"}");
    R2dbcLeaseStore leases = R2dbcLeaseStore.builder(pool).table(keys).build();
    Mono.fromCompletionStage(() -> leases.claimAsync(request, "owner-a", Duration.ofMinutes(1), Duration.ofHours(1))).block(WAIT);

    AttemptResult result = execute(request, insert("lease", 201, "x"));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
    assertThat(result.retryAfter()).isPositive();
    assertThat(count(effects)).isZero();
  }

  private AttemptResult execute(IdempotentRequest request, Function<Connection, Mono<StoredResponse>> effect) {
    return idem.execute(transactions, request, effect).block(WAIT);
  }

  /** An effect that inserts one row and answers with {@code status} and {@code body}. */
  private Function<Connection, Mono<StoredResponse>> insert(String id, int status, String body) {
    return c -> Flux.from(c.createStatement("INSERT INTO " + effects + " (id, note) VALUES ('" + id + "', 'written')").execute())
        .concatMap(Result::getRowsUpdated)
        .then(Mono.fromSupplier(() -> StoredResponse.of(status, body)));
  }

  private static IdempotentRequest request(String json) {
    return request(IdempotencyKey.of(UUID.randomUUID().toString()), json);
  }

  private static IdempotentRequest request(IdempotencyKey key, String json) {
    return new IdempotentRequest(Scope.of("alice", "POST /notes"), key, Fingerprint.ofJson(json.getBytes(StandardCharsets.UTF_8)));
  }

  private void sql(String text) {
    Mono.usingWhen(pool.create(), c -> Flux.from(c.createStatement(text).execute()).concatMap(Result::getRowsUpdated).then(),
        Connection::close).block(WAIT);
  }

  private long count(String table) {
    return Mono.usingWhen(pool.create(),
            c -> Flux.from(c.createStatement("SELECT COUNT(*) FROM " + table).execute())
                .concatMap(result -> result.map((row, meta) -> ((Number) row.get(0)).longValue()))
                .next(),
            Connection::close)
        .onErrorResume(R2dbcException.class, e -> R2dbcKeyTable.tableMissing(e) ? Mono.just(0L) : Mono.error(e))
        .block(WAIT);
  }
}
