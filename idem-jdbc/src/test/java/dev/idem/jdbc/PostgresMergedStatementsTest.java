package dev.idem.jdbc;

import static dev.idem.jdbc.PostgresEffectDb.assertIdle;
import static dev.idem.jdbc.PostgresEffectDb.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemStoreException;
import dev.idem.core.Outcome;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * PostgreSQL: the merged statements (the lookup with the claim, the last key statement with the
 * {@code COMMIT}, the lease read with its insert) under racing duplicates, expired and orphaned
 * rows, and failures at the carried {@code COMMIT}. Whatever happens, an effect never commits
 * without its completed key, a key never completes without its effect, and the connection comes
 * back in auto-commit mode with no transaction open.
 */
class PostgresMergedStatementsTest {

  private static final int RACERS = 8;
  @RegisterExtension final PostgresEffectDb db = new PostgresEffectDb("CREATE TABLE fx (id VARCHAR(64) NOT NULL, note VARCHAR(64))");

  private static void insertEffectRow(Connection c, String id, String note) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO fx (id, note) VALUES (?, ?)")) {
      ps.setString(1, id);
      ps.setString(2, note);
      ps.executeUpdate();
    }
  }

  private static String body(Outcome o) {
    return new String(o.response().body(), StandardCharsets.UTF_8);
  }

  /** Runs {@code racers} tasks released together; returns their results or failures. */
  private static List<Object> race(int racers, java.util.function.IntFunction<Object> task) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    try {
      CyclicBarrier start = new CyclicBarrier(racers);
      List<Future<Object>> futures = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        int n = i;
        futures.add(pool.submit(() -> {
          start.await();
          try {
            return task.apply(n);
          } catch (RuntimeException e) {
            return e;
          }
        }));
      }
      List<Object> results = new ArrayList<>();
      for (Future<Object> f : futures) {
        results.add(f.get(60, TimeUnit.SECONDS));
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  // ------------------------------------------------------------------ racing duplicates

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void racingDuplicatesInOwnTransactionsCommitOneEffectAndAllAnswerIt(JdbcIdempotency.Strategy strategy) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
    }
    for (int k = 0; k < 5; k++) {
      String key = "race-" + k;
      List<Object> results = race(RACERS, n -> {
        try (Connection c = db.open()) {
          Outcome o = idem.execute(c, request(key), xCtx -> {
            Connection x = xCtx.connection();
            insertEffectRow(x, key, "racer-" + n);
            Thread.sleep(20);
            return StoredResponse.of(201, "racer-" + n);
          });
          assertIdle(c);
          return o;
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      assertThat(results).allMatch(r -> r instanceof Outcome, "all outcomes: " + results);
      assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = '" + key + "'")).isOne();
      String winner = note(key);
      for (Object r : results) {
        assertThat(body((Outcome) r)).isEqualTo(winner);
      }
      assertThat(results.stream().filter(r -> !((Outcome) r).replayed()).count()).isOne();
    }
  }

  private String note(String key) throws SQLException {
    try (Connection c = db.open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT note FROM fx WHERE id = '" + key + "'")) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Test
  void racingDuplicatesThroughTheRunnerCommitOneEffect() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
    }
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(idem, db.dataSource(), new dev.idem.core.IdemListener() { });
    for (int k = 0; k < 5; k++) {
      String key = "runner-" + k;
      List<Object> results = race(RACERS, n -> engine.attempt(request(key), ctx -> {
        try {
          insertEffectRow(ctx.connection(), key, "racer-" + n);
          Thread.sleep(20);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
        return StoredResponse.of(201, "racer-" + n);
      }));
      assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = '" + key + "'")).isOne();
      String winner = note(key);
      int executed = 0;
      for (Object r : results) {
        assertThat(r).isInstanceOf(AttemptResult.class);
        AttemptResult a = (AttemptResult) r;
        assertThat(a.kind()).as(a.toString()).isIn(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED);
        assertThat(body(a.outcome().orElseThrow())).isEqualTo(winner);
        executed += a.kind() == AttemptResult.Kind.EXECUTED ? 1 : 0;
      }
      assertThat(executed).isOne();
    }
  }

  @Test
  void racingLeaseClaimsGiveOneOwner() throws Exception {
    JdbcLeaseStore store = JdbcLeaseStore.builder(db.dataSource()).table("keys").build();
    for (int k = 0; k < 5; k++) {
      String key = "lease-" + k;
      List<Object> results = race(RACERS, n -> store.claim(request(key), "owner-" + n, Duration.ofSeconds(30), Duration.ofHours(1)));
      long claimed = results.stream().filter(r -> ((ClaimResult) r).state() == ClaimResult.State.CLAIMED).count();
      long inProgress = results.stream().filter(r -> ((ClaimResult) r).state() == ClaimResult.State.IN_PROGRESS).count();
      assertThat(claimed).as(results.toString()).isOne();
      assertThat(inProgress).isEqualTo(RACERS - 1);
    }
    // An expired record, raced: one owner again.
    db.exec("UPDATE keys SET expires_at = 0");
    List<Object> results = race(RACERS, n -> store.claim(request("lease-0"), "late-" + n, Duration.ofSeconds(30), Duration.ofHours(1)));
    assertThat(results.stream().filter(r -> ((ClaimResult) r).state() == ClaimResult.State.CLAIMED).count()).isOne();
  }

  // ------------------------------------------------------------------ expired and orphaned rows

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void racingDuplicatesOverAnExpiredOrOrphanedRowCommitOneEffect(JdbcIdempotency.Strategy strategy) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      idem.execute(c, request("expired"), x -> StoredResponse.of(201, "old"));
    }
    db.exec("UPDATE keys SET expires_at = 0 WHERE idem_key = 'expired'");
    db.exec("INSERT INTO keys (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
        + " SELECT 'p', 'op', 'orphan', fingerprint, 'IN_PROGRESS', 0, 9000000000000 FROM keys WHERE idem_key = 'expired'");
    for (String key : new String[] {"expired", "orphan"}) {
      List<Object> results = race(RACERS, n -> {
        try (Connection c = db.open()) {
          return idem.execute(c, request(key), xCtx -> {
            Connection x = xCtx.connection();
            insertEffectRow(x, key, "racer-" + n);
            Thread.sleep(20);
            return StoredResponse.of(201, "racer-" + n);
          });
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      assertThat(results).allMatch(r -> r instanceof Outcome, "all outcomes: " + results);
      assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = '" + key + "'")).isOne();
      String winner = note(key);
      for (Object r : results) {
        assertThat(body((Outcome) r)).isEqualTo(winner);
      }
      assertThat(db.count("SELECT COUNT(*) FROM keys WHERE idem_key = '" + key + "' AND state = 'COMPLETED'"
          + " AND expires_at > 1700000000000")).isOne();
    }
  }

  @Test
  void aLiveLeaseClaimIsInProgressForTransactionalModeAndAnOrphanIsTakenByALease() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    JdbcLeaseStore store = JdbcLeaseStore.builder(db.dataSource()).table("keys").build();
    assertThat(store.claim(request("leased"), "owner", Duration.ofSeconds(30), Duration.ofHours(1)).state())
        .isEqualTo(ClaimResult.State.CLAIMED);
    AtomicInteger ran = new AtomicInteger();
    try (Connection c = db.open()) {
      assertThatThrownBy(() -> idem.execute(c, request("leased"), x -> {
        ran.incrementAndGet();
        return StoredResponse.of(201, "no");
      })).isInstanceOf(RequestInProgressException.class);
      assertIdle(c);
      c.setAutoCommit(false);
      assertThatThrownBy(() -> idem.execute(c, request("leased"), x -> {
        ran.incrementAndGet();
        return StoredResponse.of(201, "no");
      })).isInstanceOf(RequestInProgressException.class);
      c.rollback();
      c.setAutoCommit(true);
    }
    assertThat(ran).hasValue(0);
    // An orphaned transactional claim: the lease store takes it over.
    db.exec("INSERT INTO keys (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
        + " SELECT 'p', 'op', 'orph', fingerprint, 'IN_PROGRESS', 0, 9000000000000 FROM keys WHERE idem_key = 'leased'");
    ClaimResult r = store.claim(request("orph"), "owner2", Duration.ofSeconds(30), Duration.ofHours(1));
    assertThat(r.state()).isEqualTo(ClaimResult.State.CLAIMED);
  }

  // ------------------------------------------------------------------ failures at the carried COMMIT

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aDeferredConstraintFailingAtTheCarriedCommitLeavesNeitherEffectNorKey(JdbcIdempotency.Strategy strategy) throws Exception {
    db.exec("CREATE TABLE dfx (id VARCHAR(64), CONSTRAINT dfx_u UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)");
    db.exec("INSERT INTO dfx VALUES ('taken')");
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      assertThatThrownBy(() -> idem.execute(c, request("deferred"), xCtx -> {
        Connection x = xCtx.connection();
        try (Statement st = x.createStatement()) {
          st.execute("INSERT INTO dfx VALUES ('taken')");
        }
        insertEffectRow(x, "deferred", "first");
        return StoredResponse.of(201, "first");
      })).isInstanceOf(IdemStoreException.class).hasRootCauseInstanceOf(SQLException.class);
      assertIdle(c);
      assertThat(db.count("SELECT COUNT(*) FROM fx")).isZero();
      assertThat(db.count("SELECT COUNT(*) FROM keys")).isZero();
      assertThat(db.count("SELECT COUNT(*) FROM dfx")).isOne();
      // The same key again, now without the conflict: it runs, once.
      Outcome o = idem.execute(c, request("deferred"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "deferred", "second");
        return StoredResponse.of(201, "second");
      });
      assertThat(o.replayed()).isFalse();
      assertThat(idem.execute(c, request("deferred"), x -> StoredResponse.of(500, "no")).replayed()).isTrue();
      assertIdle(c);
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx")).isOne();
  }

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void serializationFailuresAtTheCarriedCommitRunTheRoundAgain(JdbcIdempotency.Strategy strategy) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
    }
    Set<String> failures = ConcurrentHashMap.newKeySet();
    AtomicInteger runs = new AtomicInteger();
    for (int round = 0; round < 4; round++) {
      String prefix = "ser-" + round + "-";
      CyclicBarrier bothRead = new CyclicBarrier(2);
      List<Object> results = race(2, n -> {
        try (Connection c = db.open()) {
          c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
          Outcome o = idem.execute(c, request(prefix + n), xCtx -> {
            Connection x = xCtx.connection();
            runs.incrementAndGet();
            try (Statement st = x.createStatement(); ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM fx")) {
              rs.next();
            }
            try {
              bothRead.await(2, TimeUnit.SECONDS);
            } catch (Exception ignored) {
              // the retry runs alone
            }
            insertEffectRow(x, prefix + n, "w");
            return StoredResponse.of(201, prefix + n);
          });
          assertIdle(c);
          return o;
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        } catch (RuntimeException e) {
          failures.add(e.toString());
          throw e;
        }
      });
      assertThat(results).as(failures.toString()).allMatch(r -> r instanceof Outcome);
      for (int n = 0; n < 2; n++) {
        assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = '" + prefix + n + "'")).isOne();
        assertThat(db.count("SELECT COUNT(*) FROM keys WHERE idem_key = '" + prefix + n + "' AND state = 'COMPLETED'")).isOne();
      }
    }
    assertThat(runs.get()).as("some rounds ran again after a serialization failure").isGreaterThan(8);
  }

  /**
   * A serialization failure that rolled back a runner's transaction (the filter's and the
   * starter's path) was answered 503 rolled-back although nothing had happened; on a Galera
   * cluster every duplicate sent to another node at the same time lost that way. The attempt now
   * runs again and commits, in either order.
   */
  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aSerializationFailureThatRolledBackARunnersTransactionRunsTheAttemptAgain(JdbcIdempotency.Strategy strategy)
      throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
    }
    javax.sql.DataSource serializable = new javax.sql.DataSource() {
      @Override public Connection getConnection() throws SQLException {
        Connection c = db.open();
        c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
        return c;
      }
      @Override public Connection getConnection(String u, String p) throws SQLException { return getConnection(); }
      @Override public java.io.PrintWriter getLogWriter() { return null; }
      @Override public void setLogWriter(java.io.PrintWriter out) {}
      @Override public void setLoginTimeout(int seconds) {}
      @Override public int getLoginTimeout() { return 0; }
      @Override public java.util.logging.Logger getParentLogger() { return java.util.logging.Logger.getGlobal(); }
      @Override public <T> T unwrap(Class<T> iface) throws SQLException { throw new SQLException("not a wrapper"); }
      @Override public boolean isWrapperFor(Class<?> iface) { return false; }
    };
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(idem, serializable, new dev.idem.core.IdemListener() { });
    AtomicInteger runs = new AtomicInteger();
    for (int round = 0; round < 4; round++) {
      String prefix = "runner-ser-" + strategy + "-" + round + "-";
      CyclicBarrier bothRead = new CyclicBarrier(2);
      List<Object> results = race(2, n -> engine.attempt(request(prefix + n), ctx -> {
        runs.incrementAndGet();
        Connection x = ctx.connection();
        try (Statement st = x.createStatement(); ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM fx")) {
          rs.next();
        }
        try {
          bothRead.await(500, TimeUnit.MILLISECONDS);
        } catch (Exception ignored) {
          // the run again goes alone
        }
        insertEffectRow(x, prefix + n, "w");
        return StoredResponse.of(201, prefix + n);
      }));
      for (int n = 0; n < 2; n++) {
        AttemptResult a = (AttemptResult) results.get(n);
        assertThat(a.kind()).as(a.toString()).isEqualTo(AttemptResult.Kind.EXECUTED);
        assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = '" + prefix + n + "'")).isOne();
        assertThat(db.count("SELECT COUNT(*) FROM keys WHERE idem_key = '" + prefix + n + "' AND state = 'COMPLETED'")).isOne();
      }
    }
    assertThat(runs.get()).as("some attempts ran again after a serialization failure").isGreaterThan(8);
  }

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aBackendTerminatedWhileTheEffectRunsCommitsNothing(JdbcIdempotency.Strategy strategy) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open(); Connection killer = db.open()) {
      idem.createSchema(c);
      long pid;
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        pid = rs.getLong(1);
      }
      assertThatThrownBy(() -> idem.execute(c, request("killed"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "killed", "x");
        try (Statement st = killer.createStatement()) {
          st.execute("SELECT pg_terminate_backend(" + pid + ")");
        }
        Thread.sleep(200);
        return StoredResponse.of(201, "x");
      })).isInstanceOf(IdemStoreException.class);
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx")).isZero();
    assertThat(db.count("SELECT COUNT(*) FROM keys")).isZero();
    try (Connection c = db.open()) {
      assertThat(idem.execute(c, request("killed"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "killed", "y");
        return StoredResponse.of(201, "y");
      }).replayed()).isFalse();
    }
  }

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aStatementTimeoutAtTheCarriedCommitCommitsNothing(JdbcIdempotency.Strategy strategy) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open(); Connection locker = db.open()) {
      idem.createSchema(c);
      // A lock on the key table's row that the completion must wait for does not exist (the claim
      // holds it), so the timeout is made to fire on the key statement itself: a trigger sleeps.
      try (Statement st = locker.createStatement()) {
        st.execute("CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$");
        st.execute("CREATE TRIGGER slow_keys BEFORE INSERT OR UPDATE ON keys FOR EACH ROW WHEN (NEW.state = 'COMPLETED') EXECUTE FUNCTION slow()");
      }
      assertThatThrownBy(() -> idem.execute(c, request("timeout"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "timeout", "x");
        try (Statement st = x.createStatement()) {
          st.execute("SET LOCAL statement_timeout = 100");
        }
        return StoredResponse.of(201, "x");
      })).isInstanceOf(IdemStoreException.class);
      assertIdle(c);
      assertThat(db.count("SELECT COUNT(*) FROM fx")).isZero();
      assertThat(db.count("SELECT COUNT(*) FROM keys")).isZero();
      try (Statement st = locker.createStatement()) {
        st.execute("DROP TRIGGER slow_keys ON keys");
      }
      assertThat(idem.execute(c, request("timeout"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "timeout", "y");
        return StoredResponse.of(201, "y");
      }).replayed()).isFalse();
      assertIdle(c);
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx")).isOne();
  }

  // ------------------------------------------------------------------ caller's transaction, stricter isolation

  @Test
  void aCallersRepeatableReadTransactionReplaysACommittedRecordAndClaimsAnExpiredOne() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      idem.execute(c, request("done"), x -> StoredResponse.of(201, "done"));
      idem.execute(c, request("old"), x -> StoredResponse.of(201, "old"));
    }
    db.exec("UPDATE keys SET expires_at = 0 WHERE idem_key = 'old'");
    for (int level : new int[] {Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE}) {
      try (Connection c = db.open()) {
        c.setTransactionIsolation(level);
        c.setAutoCommit(false);
        Outcome replay = idem.execute(c, request("done"), x -> StoredResponse.of(500, "must not run"));
        assertThat(replay.replayed()).isTrue();
        assertThat(body(replay)).isEqualTo("done");
        Outcome renewed = idem.execute(c, request("old"), xCtx -> {
          Connection x = xCtx.connection();
          insertEffectRow(x, "old", "level-" + level);
          return StoredResponse.of(201, "new-" + level);
        });
        assertThat(renewed.replayed()).isFalse();
        c.commit();
        c.setAutoCommit(true);
      }
      db.exec("UPDATE keys SET expires_at = 0 WHERE idem_key = 'old'");
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = 'old'")).isEqualTo(2);
  }

  @Test
  void aCallersRepeatableReadTransactionThatMissedAConcurrentCommitFailsWithoutRunning() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    try (Connection c = db.open(); Connection other = db.open()) {
      idem.createSchema(c);
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        st.executeQuery("SELECT 1 FROM keys").close(); // takes the snapshot
      }
      idem.execute(other, request("late"), x -> StoredResponse.of(201, "first"));
      AtomicInteger ran = new AtomicInteger();
      Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> idem.execute(c, request("late"), x -> {
        ran.incrementAndGet();
        return StoredResponse.of(201, "second");
      }));
      c.rollback();
      c.setAutoCommit(true);
      assertThat(ran).hasValue(0);
      assertThat(t).as("the snapshot cannot see the record: a serialization failure").isInstanceOf(IdemStoreException.class);
      assertThat(idem.execute(c, request("late"), x -> StoredResponse.of(201, "third")).replayed()).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aBackendTerminatedInTheCarriedCommitsStatementCommitsNothingAndTheRetryRuns(JdbcIdempotency.Strategy strategy) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      // The key statement's own backend ends while it runs: the COMMIT after it never runs.
      db.exec("CREATE FUNCTION die() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
          + " IF NEW.idem_key = 'dies' THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$");
      db.exec("CREATE TRIGGER die_keys BEFORE INSERT OR UPDATE ON keys FOR EACH ROW WHEN (NEW.state = 'COMPLETED') EXECUTE FUNCTION die()");
      Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> idem.execute(c, request("dies"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "dies", "x");
        return StoredResponse.of(201, "x");
      }));
      assertThat(t).isInstanceOf(OutcomeUnknownException.class).hasMessageContaining("outcome is unknown");
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx")).isZero();
    assertThat(db.count("SELECT COUNT(*) FROM keys")).isZero();
    db.exec("DROP TRIGGER die_keys ON keys");
    try (Connection c = db.open()) {
      assertThat(idem.execute(c, request("dies"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "dies", "y");
        return StoredResponse.of(201, "y");
      }).replayed()).isFalse();
      assertIdle(c);
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx")).isOne();
  }

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aDivisionByZeroOfTheApplicationsDeferredTriggerAtTheCarriedCommitIsNotTakenForAMissingKeyRow(
      JdbcIdempotency.Strategy strategy) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
    db.exec("CREATE FUNCTION check_fx() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        + " IF NEW.note = 'bad' THEN PERFORM 1 / 0; END IF; RETURN NULL; END $$");
    db.exec("CREATE CONSTRAINT TRIGGER fx_check AFTER INSERT ON fx DEFERRABLE INITIALLY DEFERRED"
        + " FOR EACH ROW EXECUTE FUNCTION check_fx()");
    AtomicInteger runs = new AtomicInteger();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      Throwable t = org.assertj.core.api.Assertions.catchThrowable(() -> idem.execute(c, request("deferred-22012"), xCtx -> {
        Connection x = xCtx.connection();
        runs.incrementAndGet();
        insertEffectRow(x, "deferred-22012", "bad");
        return StoredResponse.of(201, "x");
      }));
      assertThat(t).isInstanceOf(IdemStoreException.class);
      assertIdle(c);
      assertThat(db.count("SELECT COUNT(*) FROM fx")).isZero();
      assertThat(db.count("SELECT COUNT(*) FROM keys")).isZero();
      // The application's own error at COMMIT: the effect ran once, and the failure says what failed.
      assertThat(runs).hasValue(1);
      assertThat(t).hasMessageNotContaining("disappeared").hasMessageNotContaining("after 5 rounds");
    }
  }

  @Test
  void leaseClaimsAndTransactionalCreatesRacingOnOneKeyGiveOneWinner() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    JdbcLeaseStore store = JdbcLeaseStore.builder(db.dataSource()).table("keys").build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
    }
    for (int k = 0; k < 5; k++) {
      String key = "mixed-" + k;
      List<Object> results = race(RACERS, n -> {
        if (n % 2 == 0) {
          return store.claim(request(key), "owner-" + n, Duration.ofSeconds(30), Duration.ofHours(1));
        }
        try (Connection c = db.open()) {
          Outcome o = idem.execute(c, request(key), xCtx -> {
            Connection x = xCtx.connection();
            insertEffectRow(x, key, "tx-" + n);
            Thread.sleep(20);
            return StoredResponse.of(201, "tx-" + n);
          });
          assertIdle(c);
          return o;
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      long leaseWins = results.stream().filter(r -> r instanceof ClaimResult
          && ((ClaimResult) r).state() == ClaimResult.State.CLAIMED).count();
      long txWins = results.stream().filter(r -> r instanceof Outcome && !((Outcome) r).replayed()).count();
      assertThat(leaseWins + txWins).as(results.toString()).isOne();
      assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = '" + key + "'")).isEqualTo(txWins);
      for (Object r : results) {
        if (r instanceof RuntimeException) {
          assertThat(r).as("only a lease winner's claim leaves transactional racers in progress")
              .isInstanceOf(RequestInProgressException.class);
          assertThat(leaseWins).isOne();
        }
      }
    }
  }

  @Test
  void racingCallersAtRepeatableReadCommitOneEffectAndTheLosersReplayOnRetry() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
    }
    for (int k = 0; k < 3; k++) {
      String key = "rr-" + k;
      List<Object> results = race(RACERS, n -> {
        try (Connection c = db.open()) {
          c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
          for (int attempt = 0; ; attempt++) {
            c.setAutoCommit(false);
            try {
              Outcome o = idem.execute(c, request(key), xCtx -> {
                Connection x = xCtx.connection();
                insertEffectRow(x, key, "racer-" + n);
                Thread.sleep(20);
                return StoredResponse.of(201, "racer-" + n);
              });
              c.commit();
              c.setAutoCommit(true);
              return o;
            } catch (IdemStoreException e) {
              c.rollback();
              c.setAutoCommit(true);
              if (attempt >= 3) {
                throw e;
              }
            }
          }
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      assertThat(results).allMatch(r -> r instanceof Outcome, "all outcomes: " + results);
      assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = '" + key + "'")).isOne();
      String winner = note(key);
      for (Object r : results) {
        assertThat(body((Outcome) r)).isEqualTo(winner);
      }
    }
  }
}
