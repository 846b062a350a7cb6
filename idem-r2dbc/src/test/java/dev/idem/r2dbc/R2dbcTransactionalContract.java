package dev.idem.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.testkit.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.IsolationLevel;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.Result;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
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
    assertThat(results).as(() -> failures(results)).extracting(AttemptResult::kind)
        .containsOnly(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED)
        .filteredOn(kind -> kind == AttemptResult.Kind.EXECUTED).hasSize(1);
    assertThat(results).allSatisfy(r -> assertThat(r.outcome().orElseThrow().response().bodyAsString()).isEqualTo("created"));
    assertThat(count(effects)).isEqualTo(1);
  }

  /**
   * Regression: engines creating one new key table at the same moment (replicas starting
   * together, or the first requests of one engine) lost a race in PostgreSQL's catalog: of two
   * {@code CREATE TABLE IF NOT EXISTS} that both found the table missing, one failed with "type
   * already exists" (42710), which was not counted as made, and its request was answered "store
   * unavailable". Seen once in CI as a duplicate's STORE_UNAVAILABLE in {@link
   * #tenConcurrentDuplicatesRunTheEffectOnce}; about one round in fifty of ten creators meets it
   * here. Creators now take the table's schema lock, and one that meets a duplicate-object error
   * runs its statements again.
   */
  @Test
  void concurrentCreatorsOfANewKeyTableAllSucceed() {
    R2dbcTestDatabases.warm(pool, 10);
    // the lease store's classes loaded here, not first on a non-blocking thread (BlockHound)
    R2dbcLeaseStore warmUp = R2dbcLeaseStore.builder(pool).table(keys + "_w").build();
    warmUp.purgeExpiredAsync(1).toCompletableFuture().join();
    sql("DROP TABLE " + keys + "_w");
    for (int round = 0; round < 60; round++) {
      String table = keys + "_c" + round;
      R2dbcTransactionalIdempotency engine = R2dbcTransactionalIdempotency.builder(pool).table(table).build();
      // half transactional engines, half lease stores (which share the table's shape and creation)
      List<Mono<Void>> creators = Flux.range(0, 10)
          .map(i -> {
            if (i % 2 == 0) {
              return (i == 0 ? engine : R2dbcTransactionalIdempotency.builder(pool).table(table).build()).createSchema();
            }
            R2dbcLeaseStore store = R2dbcLeaseStore.builder(pool).table(table).build();
            return Mono.fromCompletionStage(() -> store.purgeExpiredAsync(1)).then();
          })
          .collectList().block(WAIT);
      try {
        List<Throwable> failures = Flux.fromIterable(creators)
            .flatMap(creator -> creator.subscribeOn(Schedulers.parallel())
                .then(Mono.<Throwable>empty())
                .onErrorResume(e -> Mono.just(e)))
            .collectList()
            .block(WAIT);
        assertThat(failures).as("round %d", round).isEmpty();
        assertThat(execute(engine, request("{\"round\":" + round + "}"), c -> Mono.just(StoredResponse.of(201, "ok"))).kind())
            .isEqualTo(AttemptResult.Kind.EXECUTED);
      } finally {
        sql("DROP TABLE IF EXISTS " + table);
      }
    }
  }

  /**
   * A creator that takes no schema lock (a migration tool, an earlier version) makes the table in
   * a transaction that is still open when the engine creates it: on PostgreSQL the engine's
   * statements wait for that transaction, fail with a duplicate-object error once it commits, and
   * run again, then finding the table.
   */
  @Test
  void aCreatorThatTakesNoLockMakesTheTableWhileTheEngineCreatesIt() throws Exception {
    Assumptions.assumeTrue(idem.dialect().abortsTransactionOnError(),
        "PostgreSQL only: MariaDB's CREATE TABLE IF NOT EXISTS is one atomic statement");
    String table = keys + "_m";
    Connection migration = Mono.from(pool.create()).block(WAIT);
    try {
      Mono.from(migration.beginTransaction()).block(WAIT);
      for (String ddl : idem.dialect().keyTableSql(table).schemaStatements()) {
        Flux.from(migration.createStatement(ddl).execute()).concatMap(Result::getRowsUpdated).blockLast(WAIT);
      }
      R2dbcTransactionalIdempotency engine = R2dbcTransactionalIdempotency.builder(pool).table(table).build();
      CompletableFuture<Void> created = engine.createSchema().toFuture();
      Thread.sleep(300);
      assertThat(created).as("waits for the migration's uncommitted catalog rows").isNotDone();
      Mono.from(migration.commitTransaction()).block(WAIT);
      created.get(30, TimeUnit.SECONDS);
      assertThat(execute(engine, request("{\"m\":1}"), c -> Mono.just(StoredResponse.of(201, "ok"))).kind())
          .isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      Mono.from(migration.close()).block(WAIT);
      sql("DROP TABLE IF EXISTS " + table);
    }
  }

  /**
   * The R2DBC purge (a lease store's, on this engine's table) in batches that end inside runs of
   * equal expiries: every expired record goes, the live one stays (on PostgreSQL and MariaDB each
   * batch starts where the last one ended).
   */
  @Test
  void thePurgeTakesEveryExpiredRecordWhenBatchesEndAmongEqualExpiries() {
    for (int i = 0; i < 26; i++) {
      execute(request(IdempotencyKey.of("k-spread-" + i), "{}"), c -> Mono.just(StoredResponse.of(201, "ok")));
    }
    for (int i = 0; i < 25; i++) {
      // groups of three equal expiries, a batch of four: every batch ends inside a group
      sql("UPDATE " + keys + " SET expires_at = " + (1_000 + i / 3 * 1_000) + " WHERE idem_key = 'k-spread-" + i + "'");
    }
    R2dbcLeaseStore store = R2dbcLeaseStore.builder(pool).table(keys).createSchema(false).build();

    assertThat(store.purgeExpiredAsync(4).toCompletableFuture().join()).isEqualTo(25);
    assertThat(count(keys)).isEqualTo(1);
    assertThat(execute(request(IdempotencyKey.of("k-spread-25"), "{}"), c -> Mono.just(StoredResponse.of(201, "again"))).kind())
        .isEqualTo(AttemptResult.Kind.REPLAYED);
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

    assertThat(duplicates).as(() -> failures(duplicates)).extracting(AttemptResult::kind).containsOnly(AttemptResult.Kind.IN_PROGRESS);
    assertThat(duplicates).allSatisfy(d -> assertThat(d.retryAfter()).isPositive());
    assertThat(first.block(WAIT).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(execute(request, insert("busy", 201, "later")).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(runs).hasValue(1);
    assertThat(count(effects)).isEqualTo(1);
  }

  /**
   * The fault: a fail-fast claim's lock-wait bound is not specific to a duplicate's row (PostgreSQL's
   * {@code lock_timeout} ends any lock wait of the insert: the relation extension lock while
   * concurrent inserts grow the table, a table lock of DDL; on MariaDB a gap lock of another
   * transaction's locking read), and its give-up was answered in progress (a 409) for a key nobody
   * else had sent. Deterministic: another connection locks the key table until the engine's first
   * transaction gave up; the engine must confirm the give-up in a new transaction, which then meets
   * no lock and runs the create once.
   */
  @Test
  void aFreshKeysClaimThatGaveUpOnALockThatIsNotADuplicatesRowWasAnsweredInProgress() {
    assertThat(execute(request("{\"warm\":1}"), insert("warm-up", 201, "ok")).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    Connection holder = Mono.from(pool.create()).block(WAIT);
    try {
      // MariaDB: the gap locks of a locking read are REPEATABLE READ's (the server's default, said here)
      Mono.from(holder.setTransactionIsolationLevel(IsolationLevel.REPEATABLE_READ)).block(WAIT);
      Mono.from(holder.beginTransaction()).block(WAIT);
      String lock = idem.dialect().abortsTransactionOnError()
          ? "LOCK TABLE " + keys + " IN SHARE ROW EXCLUSIVE MODE" // blocks inserts, not reads
          : "SELECT idem_key FROM " + keys + " FOR UPDATE"; // every record and the gaps between and after them
      Flux.from(holder.createStatement(lock).execute()).concatMap(r -> r.map((row, meta) -> 1)).blockLast(WAIT);
      AtomicInteger begun = new AtomicInteger();
      R2dbcTransactions releasing = new R2dbcTransactions() {
        @Override
        public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
          // the lock goes before the second transaction begins, that is after the first gave up
          Mono<Void> before = begun.incrementAndGet() == 2 ? Mono.from(holder.rollbackTransaction()).then() : Mono.empty();
          return before.then(transactions.inTransaction(work, commit));
        }
      };

      AttemptResult result = idem.execute(releasing, request("{\"fresh\":1}"), insert("fresh", 201, "created")).block(WAIT);

      assertThat(result.kind()).as(() -> failures(List.of(result))).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(begun).as("the first claim gave up on the lock and was confirmed in a second transaction").hasValue(2);
      assertThat(count(effects)).as("the warm-up's row and the create's, once").isEqualTo(2);
    } finally {
      Mono.from(holder.close()).block(WAIT);
    }
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

    assertThat(results).as(() -> failures(results)).extracting(AttemptResult::kind).containsOnly(AttemptResult.Kind.EXECUTED);
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
    AttemptResult lost = idem.execute(commitLost(), request, insert("commit", 201, "created")).block(WAIT);

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

  @Test
  void aLostCommitWasReportedAsALeaseCompletionInDoubt() {
    IdempotentRequest request = request("{\"text\":\"phase\"}");
    AttemptResult lost = idem.execute(commitLost(), request, insert("phase", 201, "created")).block(WAIT);

    assertThat(lost.kind()).isEqualTo(AttemptResult.Kind.OUTCOME_UNKNOWN);
    // the commit of writes and answer together is in doubt, not a lease-mode completion after an effect that happened
    assertThat(lost.failure().orElseThrow()).isInstanceOfSatisfying(OutcomeUnknownException.class,
        e -> assertThat(e.phase()).isEqualTo(OutcomeUnknownException.Phase.COMMIT));
  }

  @Test
  void anAttemptInTheCallersTransactionWaitedForASecondConnection() {
    // the table exists; the caller's transaction holds the only connection of its pool
    execute(request("{\"text\":\"table\"}"), insert("table", 201, "created"));
    ConnectionPool one = R2dbcTestDatabases.pool(db(), 1);
    try {
      for (boolean create : new boolean[] {true, false}) {
        R2dbcTransactionalIdempotency onOne = R2dbcTransactionalIdempotency.builder(one).table(keys).createSchema(create).build();
        if (create) {
          // the engine's first attempt finds the table, on a connection of its own
          onOne.execute(R2dbcTransactions.of(one), request("{\"first\":1}"), insert("first", 201, "ok")).block(WAIT);
        }
        IdempotentRequest request = request("{\"create\":" + create + "}");
        AttemptResult result = R2dbcTransactions.of(one).inTransaction(
                c -> onOne.attempt(c, request, insert("one-" + create, 201, "created")),
                r -> r.kind() == AttemptResult.Kind.EXECUTED)
            .block(Duration.ofSeconds(10));
        assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      }
      // Idem's own transactions on a pool of one: the schema check does not hold a connection either
      R2dbcTransactionalIdempotency onOne = R2dbcTransactionalIdempotency.builder(one).table(keys).build();
      assertThat(onOne.execute(R2dbcTransactions.of(one), request("{\"own\":1}"), insert("own", 201, "ok"))
          .block(Duration.ofSeconds(10)).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      one.dispose();
    }
    assertThat(count(effects)).isEqualTo(5);
  }

  @Test
  void racersTakingOverOneExpiredRecordRunTheEffectOnce() {
    IdempotentRequest request = request("{\"text\":\"takeover\"}");
    execute(request, insert("old", 201, "old"));
    sql("UPDATE " + keys + " SET expires_at = 0");
    AtomicInteger runs = new AtomicInteger();
    Function<Connection, Mono<StoredResponse>> slow = c -> {
      runs.incrementAndGet();
      return insert("new", 201, "new").apply(c).delayElement(Duration.ofMillis(300));
    };
    List<AttemptResult> results = Flux.range(0, 6)
        .flatMap(i -> waiting().execute(transactions, request, slow).subscribeOn(Schedulers.parallel()))
        .collectList()
        .block(WAIT);

    assertThat(runs).hasValue(1);
    assertThat(results).as(() -> failures(results)).extracting(AttemptResult::kind)
        .containsOnly(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED)
        .filteredOn(kind -> kind == AttemptResult.Kind.EXECUTED).hasSize(1);
    assertThat(results).allSatisfy(r -> assertThat(r.outcome().orElseThrow().response().bodyAsString()).isEqualTo("new"));
    assertThat(count(effects)).isEqualTo(2);
  }

  @Test
  void duplicatesOfAKeyWhoseAnswerIsReleasedEachRollBack() {
    IdempotentRequest request = request("{\"text\":\"busy\"}");
    List<AttemptResult> results = Flux.range(0, 6)
        .flatMap(i -> idem.execute(transactions, request,
                c -> insert("busy", 503, "busy").apply(c).delayElement(Duration.ofMillis(100)))
            .subscribeOn(Schedulers.parallel()))
        .collectList()
        .block(WAIT);

    assertThat(results).as(() -> failures(results)).extracting(AttemptResult::kind)
        .doesNotContain(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED);
    assertThat(count(effects)).isZero();
    assertThat(count(keys)).isZero();
  }

  @Test
  void aDuplicateCancelledWhileItsClaimWaitsGivesItsConnectionBack() throws Exception {
    ConnectionPool two = R2dbcTestDatabases.pool(db(), 2);
    try {
      R2dbcTransactionalIdempotency onTwo = R2dbcTransactionalIdempotency.builder(two).table(keys).build();
      R2dbcTransactions own = R2dbcTransactions.of(two);
      IdempotentRequest request = request("{\"text\":\"wait\"}");
      CountDownLatch inEffect = new CountDownLatch(1);
      Mono<AttemptResult> first = onTwo.execute(own, request, c -> insert("wait", 201, "created").apply(c)
              .doOnNext(written -> inEffect.countDown())
              .delayElement(Duration.ofSeconds(1)))
          .cache();
      first.subscribe();
      assertThat(inEffect.await(30, TimeUnit.SECONDS)).isTrue();
      AtomicInteger duplicateRuns = new AtomicInteger();
      Disposable duplicate = onTwo.execute(own, request, c -> {
        duplicateRuns.incrementAndGet();
        return insert("wait-2", 201, "again").apply(c);
      }).subscribe();
      Thread.sleep(300); // the duplicate's claim waits on the first one's uncommitted row
      duplicate.dispose();

      assertThat(first.block(WAIT).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      AttemptResult retry = onTwo.execute(own, request, insert("wait-3", 201, "again")).block(Duration.ofSeconds(10));
      assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      AttemptResult other = onTwo.execute(own, request("{\"text\":\"after\"}"), insert("after", 201, "ok"))
          .block(Duration.ofSeconds(10));
      assertThat(other.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(duplicateRuns).hasValue(0);
    } finally {
      two.dispose();
    }
    assertThat(count(effects)).isEqualTo(2);
  }

  /**
   * Attempts cancelled at random points (before the claim, in it, in the effect, at the commit).
   * The cancellation comes on the test's thread while the attempt's next statement is being sent
   * on the driver's: a rollback sent then reached the database first, and that statement ran
   * after it on its own, outside any transaction (an effect's row committed without its key, so a
   * retry would run it again; a claim left IN_PROGRESS), and on MariaDB a connection was not given
   * back to its pool. Each attempt's key is its effect's row id, compared in one query.
   */
  @Test
  void aCancelledAttemptsNextStatementRanAfterItsRollbackOutsideAnyTransaction() {
    ConnectionPool two = R2dbcTestDatabases.pool(db(), 2);
    try {
      R2dbcTransactionalIdempotency onTwo = R2dbcTransactionalIdempotency.builder(two).table(keys).build();
      R2dbcTransactions own = R2dbcTransactions.of(two);
      onTwo.execute(own, request(IdempotencyKey.of("warm"), "{}"), insert("warm", 201, "ok")).block(WAIT);
      java.util.Random random = new java.util.Random(42);
      for (int i = 0; i < 60; i++) {
        int effectDelay = random.nextInt(20);
        String id = "c" + i; // the key and the effect's row alike
        Mono<AttemptResult> run = onTwo.execute(own, request(IdempotencyKey.of(id), "{}"),
            c -> insert(id, 201, "ok").apply(c).delayElement(Duration.ofMillis(effectDelay)));
        Disposable d = run.subscribe(r -> { }, e -> { });
        sleep(random.nextInt(25));
        d.dispose();
      }
      // every connection comes back: a new attempt on the pool of two still runs
      AttemptResult after = onTwo.execute(own, request(IdempotencyKey.of("after"), "{}"), insert("after", 201, "ok"))
          .block(Duration.ofSeconds(20));
      assertThat(after.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (two.getMetrics().orElseThrow().acquiredSize() > 0 && System.nanoTime() < deadline) {
        sleep(20); // rollbacks and closes of cancelled attempts still under way
      }
      assertThat(two.getMetrics().orElseThrow().acquiredSize()).isZero();
    } finally {
      two.dispose();
    }
    // a key is stored only with its writes, and never left claimed (one snapshot for both tables)
    assertThat(scalar("SELECT COUNT(*) FROM " + keys + " k WHERE NOT EXISTS (SELECT 1 FROM " + effects
        + " e WHERE e.id = k.idem_key)")).isZero();
    assertThat(scalar("SELECT COUNT(*) FROM " + effects + " e WHERE NOT EXISTS (SELECT 1 FROM " + keys
        + " k WHERE k.idem_key = e.id)")).isZero();
    assertThat(scalar("SELECT COUNT(*) FROM " + keys + " WHERE response IS NULL")).isZero();
  }

  @Test
  void aCancelledAttemptWasNeverEndedForItsListener() throws Exception {
    List<Throwable> ends = new java.util.concurrent.CopyOnWriteArrayList<>();
    IdemListener listener = new IdemListener() {
      @Override
      public Attempt started(IdempotentRequest request, String mode) {
        return new Attempt() {
          @Override
          public void ended(AttemptResult result) {
            ends.add(new IllegalStateException("ended " + result.kind()));
          }

          @Override
          public void failed(Throwable error) {
            ends.add(error);
          }
        };
      }
    };
    R2dbcTransactionalIdempotency observed = R2dbcTransactionalIdempotency.builder(pool).table(keys).listener(listener).build();
    CountDownLatch inEffect = new CountDownLatch(1);
    Disposable running = observed.execute(transactions, request("{\"text\":\"observed\"}"),
            c -> insert("observed", 201, "x").apply(c).doOnNext(written -> inEffect.countDown()).delayElement(Duration.ofSeconds(30)))
        .subscribe();
    assertThat(inEffect.await(30, TimeUnit.SECONDS)).isTrue();
    running.dispose(); // an observation (a timer, a span) left open would never end

    assertThat(ends).singleElement().isInstanceOf(java.util.concurrent.CancellationException.class);
  }

  /**
   * MySQL/MariaDB: a deadlock inside the effect rolls the whole transaction back, claim included,
   * and the session goes on in auto-commit. A duplicate waiting on the claim then runs and commits
   * its own answer; the first attempt's effect caught the deadlock and answered 409, and its
   * completion, now a statement of its own, overwrote the duplicate's committed record with that
   * 409 although the duplicate's writes are the ones that happened.
   */
  @Test
  void aCompletionAfterTheDatabaseRolledBackTheEffectsTransactionOverwroteADuplicatesAnswer() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeFalse(idem.dialect().abortsTransactionOnError(), "MySQL/MariaDB only");
    sql("INSERT INTO " + effects + " (id, note) VALUES ('r1', 'x'), ('r2', 'x')");
    IdempotentRequest request = request("{\"text\":\"deadlock\"}");
    Connection heavy = Mono.from(pool.create()).block(WAIT);
    try {
      Mono.from(heavy.beginTransaction()).block(WAIT);
      StringBuilder rows = new StringBuilder();
      for (int i = 0; i < 200; i++) {
        rows.append(i == 0 ? "" : ", ").append("('h").append(i).append("', 'h')");
      }
      exec(heavy, "INSERT INTO " + effects + " (id, note) VALUES " + rows); // the heavier side is not the victim
      exec(heavy, "UPDATE " + effects + " SET note = 'h' WHERE id = 'r2'");

      CountDownLatch holdsR1 = new CountDownLatch(1);
      AtomicInteger deadlocks = new AtomicInteger();
      Mono<AttemptResult> first = waiting().execute(transactions, request, c -> update(c, "r1")
              .then(Mono.fromRunnable(holdsR1::countDown))
              .then(update(c, "r2"))
              .then(Mono.just(StoredResponse.of(201, "first")))
              .onErrorResume(R2dbcException.class, e -> {
                deadlocks.incrementAndGet();
                return Mono.just(StoredResponse.of(409, "conflict"));
              }))
          .cache();
      first.subscribe(r -> { }, e -> { });
      assertThat(holdsR1.await(30, TimeUnit.SECONDS)).isTrue();
      Mono<AttemptResult> duplicate = waiting().execute(transactions, request,
              c -> insert("dup", 201, "duplicate").apply(c).delayElement(Duration.ofMillis(800)))
          .cache();
      duplicate.subscribe(r -> { }, e -> { });
      Thread.sleep(400); // the first waits on r2, the duplicate on the first's claim
      exec(heavy, "UPDATE " + effects + " SET note = 'h' WHERE id = 'r1'"); // the deadlock: the first is its victim
      Mono.from(heavy.rollbackTransaction()).block(WAIT);

      AttemptResult a = first.block(WAIT);
      AttemptResult b = duplicate.block(WAIT);
      assertThat(deadlocks).hasValue(1);
      assertThat(b.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(a.kind()).isNotEqualTo(AttemptResult.Kind.EXECUTED);
      AttemptResult replay = execute(request, insert("third", 201, "third"));
      assertThat(replay.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(replay.outcome().orElseThrow().response().bodyAsString()).isEqualTo("duplicate");
    } finally {
      Mono.from(heavy.close()).block(WAIT);
    }
  }

  private Mono<Long> update(Connection c, String id) {
    return Flux.from(c.createStatement("UPDATE " + effects + " SET note = 'updated' WHERE id = '" + id + "'").execute())
        .concatMap(Result::getRowsUpdated).reduce(0L, Long::sum);
  }

  private static void exec(Connection c, String text) {
    Flux.from(c.createStatement(text).execute()).concatMap(Result::getRowsUpdated).then().block(WAIT);
  }

  /**
   * PostgreSQL: the database refuses the effect's writes at the commit (a deferred foreign key).
   * Nothing committed, and a retry would be refused the same way: the request's own failure, as
   * idem-jdbc answers it, not an unknown outcome that tells the client to retry.
   */
  @Test
  void aDeferredConstraintRefusedAtTheCommitWasCalledAnUnknownOutcome() {
    org.junit.jupiter.api.Assumptions.assumeTrue(idem.dialect().abortsTransactionOnError(), "deferred constraints: PostgreSQL");
    String children = effects + "_c";
    sql("CREATE TABLE " + children + " (id VARCHAR(64) PRIMARY KEY, parent VARCHAR(64) REFERENCES " + effects
        + " (id) DEFERRABLE INITIALLY DEFERRED)");
    try {
      IdempotentRequest request = request("{\"text\":\"deferred\"}");
      AttemptResult result = execute(request, c -> Flux.from(c.createStatement("INSERT INTO " + children
              + " (id, parent) VALUES ('orphan', 'no such parent')").execute())
          .concatMap(Result::getRowsUpdated)
          .then(Mono.just(StoredResponse.of(201, "created"))));

      assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
      assertThat(count(keys)).isZero();
      assertThat(count(children)).isZero();
    } finally {
      sql("DROP TABLE IF EXISTS " + children);
    }
  }

  /** A commit that the database answers with a rollback (SQLState class 40, or R2DBC's rollback exception) rolled back for sure. */
  @Test
  void aCommitTheDatabaseRolledBackWasCalledAnUnknownOutcome() {
    for (RuntimeException atCommit : new RuntimeException[] {
        new io.r2dbc.spi.R2dbcTransientResourceException("could not serialize access", "40001"),
        new IllegalStateException("the framework's translation", new io.r2dbc.spi.R2dbcRollbackException("rolled back at commit"))}) {
      IdempotentRequest request = request("{\"at\":\"" + atCommit.getClass().getSimpleName() + "\"}");
      R2dbcTransactions rolledBack = new R2dbcTransactions() {
        @Override
        public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
          return transactions.inTransaction(work, value -> false).then(Mono.error(atCommit));
        }
      };
      AttemptResult result = idem.execute(rolledBack, request, insert("rb-" + atCommit.getClass().getSimpleName(), 201, "x"))
          .block(WAIT);
      assertThat(result.kind()).isEqualTo(AttemptResult.Kind.ROLLED_BACK);
    }
    assertThat(count(keys)).isZero();
  }

  @Test
  void aSealedRecordReadWithAnotherKeyringIsUnreadableAndNothingRunsAgain() {
    byte[] one = new byte[32];
    byte[] other = new byte[32];
    other[0] = 1;
    R2dbcTransactionalIdempotency sealing = R2dbcTransactionalIdempotency.builder(pool).table(keys)
        .responseProtection(dev.idem.core.ResponseProtection.builder().key("k1", one).currentKey("k1").build()).build();
    R2dbcTransactionalIdempotency wrongKeys = R2dbcTransactionalIdempotency.builder(pool).table(keys)
        .responseProtection(dev.idem.core.ResponseProtection.builder().key("k1", other).currentKey("k1").build()).build();
    IdempotentRequest request = request("{\"text\":\"sealed\"}");
    assertThat(sealing.execute(transactions, request, insert("sealed", 201, "secret")).block(WAIT).kind())
        .isEqualTo(AttemptResult.Kind.EXECUTED);

    AttemptResult read = wrongKeys.execute(transactions, request, insert("sealed-2", 201, "again")).block(WAIT);
    assertThat(read.kind()).isEqualTo(AttemptResult.Kind.STORED_RESPONSE_UNREADABLE);
    assertThat(count(effects)).isEqualTo(1);
    assertThat(sealing.execute(transactions, request, insert("sealed-3", 201, "again")).block(WAIT).kind())
        .isEqualTo(AttemptResult.Kind.REPLAYED);
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private long scalar(String text) {
    return Mono.usingWhen(pool.create(),
            c -> Flux.from(c.createStatement(text).execute())
                .concatMap(result -> result.map((row, meta) -> ((Number) row.get(0)).longValue()))
                .next(),
            Connection::close)
        .block(WAIT);
  }

  /** @return an engine on this test's table whose duplicates wait for the running attempt (up to 20 s) instead of failing fast */
  private R2dbcTransactionalIdempotency waiting() {
    return R2dbcTransactionalIdempotency.builder(pool).table(keys).retention(Duration.ofHours(1))
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(20))).build();
  }

  /** Transactions whose work runs, then rolls back, and whose caller hears of a failed commit. */
  private R2dbcTransactions commitLost() {
    return new R2dbcTransactions() {
      @Override
      public <T> Mono<T> inTransaction(Function<Connection, Mono<T>> work, Predicate<? super T> commit) {
        return transactions.inTransaction(work, value -> false)
            .then(Mono.error(new IllegalStateException("connection reset during COMMIT")));
      }
    };
  }

  /** @return the results' failures, each with its kind and cause chain, for an assertion's description */
  private static String failures(List<AttemptResult> results) {
    StringBuilder out = new StringBuilder();
    for (AttemptResult r : results) {
      r.failure().ifPresent(f -> {
        out.append(r.kind()).append(':');
        for (Throwable t = f; t != null; t = t.getCause() == t ? null : t.getCause()) {
          out.append(' ').append(t);
        }
        out.append('\n');
      });
    }
    return out.length() == 0 ? "no failures" : "failures:\n" + out;
  }

  private AttemptResult execute(IdempotentRequest request, Function<Connection, Mono<StoredResponse>> effect) {
    return execute(idem, request, effect);
  }

  private AttemptResult execute(R2dbcTransactionalIdempotency engine, IdempotentRequest request,
      Function<Connection, Mono<StoredResponse>> effect) {
    return engine.execute(transactions, request, effect).block(WAIT);
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
