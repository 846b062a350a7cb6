package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.EffectFailedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: racing callers: concurrent
 * duplicates produce one effect and all get its answer, under each isolation level, with effects
 * that deadlock or have unique constraints of their own, and inside callers' transactions.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class ConcurrencyContract extends TransactionalContract {

  private static final int RACERS = 32;

  @Test
  void concurrentDuplicatesProduceExactlyOneEffectAndEveryCallerGetsItsId() throws Exception {
    IdempotentRequest request = request("alice", "k-race", "{\"value\":42}");
    List<Outcome> outcomes = race(RACERS, c -> create(c, request, "{\"value\":42}"));
    assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
    assertThat(outcomes).filteredOn(o -> !o.replayed()).hasSize(1);
    assertThat(effectCount()).isEqualTo(1);
    if (strategy() == JdbcIdempotency.Strategy.CLAIM_FIRST) {
      assertThat(invocations).as("claim-first: duplicates wait on the claim, the effect runs once").hasValue(1);
    } else {
      // key-last: racing duplicates may run the effect; every run but one was rolled back
      assertThat(invocations.get()).isBetween(1, RACERS);
    }
  }

  /**
   * An effect with a unique constraint of its own: under key-last a racing duplicate's effect fails
   * on the winner's row before it reaches the key; it must still get the winner's response.
   */
  @Test
  void concurrentDuplicatesWhoseEffectHasItsOwnUniqueConstraintStillReplay() throws Exception {
    String unique = "uniq_" + suffix;
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + unique + " (name VARCHAR(100) PRIMARY KEY)");
    }
    IdempotentRequest request = request("alice", "k-unique", "{\"name\":\"x\"}");
    try {
      List<Outcome> outcomes = race(8, c -> idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + unique + " (name) VALUES ('x')")) {
          ps.executeUpdate();
        }
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(100);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
      assertThat(outcomes).filteredOn(o -> !o.replayed()).hasSize(1);
    } finally {
      try (Connection c = database().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + unique);
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * Regression: under key-last, racing duplicates whose effect reads with a lock before it writes
   * (MariaDB's gap locks under REPEATABLE READ) deadlock each other; the victims got an
   * EffectFailedException instead of the winner's response.
   */
  @Test
  void racingDuplicatesWhoseEffectsDeadlockStillAllGetTheWinnersAnswer() throws Exception {
    try (Connection c = database().open()) {
      Assumptions.assumeTrue(Dialect.detect(c).supportsSelectForUpdate(), "SQLite has no SELECT ... FOR UPDATE");
    }
    IdempotentRequest request = request("alice", "k-deadlock", "{}");
    List<Outcome> outcomes = race(8, c -> idem.execute(c, request, connCtx -> {
      Connection conn = connCtx.connection();
      try (PreparedStatement ps = conn.prepareStatement("SELECT id FROM " + effects.name() + " WHERE tag = ? FOR UPDATE")) {
        ps.setString(1, "t");
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return StoredResponse.of(200, "{\"id\":" + rs.getLong(1) + "}");
          }
        }
      }
      Thread.sleep(50);
      long id = effects.insert(conn, "t", "{}");
      return StoredResponse.of(201, "{\"id\":" + id + "}");
    }));
    assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
    assertThat(outcomes).filteredOn(o -> !o.replayed()).hasSize(1);
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * Regression (found in the R2DBC engine, the same statements here): on MySQL/MariaDB a deadlock
   * inside the effect rolls its whole transaction back, claim included, and the session goes on in
   * auto-commit (Idem's transaction was begun with START TRANSACTION). A duplicate waiting on the
   * claim then ran and committed its answer, and the first attempt's effect, which caught the
   * deadlock and answered 409, completed the key on its own, over that record: the duplicate's
   * writes happened, and 409 was stored. The completion writes only its own claim now, finds none,
   * and the first attempt fails without storing anything.
   */
  @Test
  void aCompletionAfterTheDatabaseRolledBackTheEffectsTransactionOverwroteADuplicatesAnswer() throws Exception {
    try (Connection c = database().open()) {
      Assumptions.assumeTrue(Dialect.detect(c).equals(Dialect.mysql()), "MySQL/MariaDB: a deadlock victim's session goes on");
      Assumptions.assumeTrue(strategy() == JdbcIdempotency.Strategy.CLAIM_FIRST, "a duplicate waits on the claim");
      idem.createSchema(c);
    }
    String rows = "rows_" + suffix;
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + rows + " (id VARCHAR(16) PRIMARY KEY, note VARCHAR(16))");
      st.execute("INSERT INTO " + rows + " (id, note) VALUES ('r1', 'x'), ('r2', 'x')");
    }
    IdempotentRequest request = request("alice", "k-victim", "{}");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try (Connection heavy = database().open(); Statement hs = heavy.createStatement()) {
      heavy.setAutoCommit(false);
      StringBuilder many = new StringBuilder();
      for (int i = 0; i < 200; i++) {
        many.append(i == 0 ? "" : ", ").append("('h").append(i).append("', 'h')");
      }
      hs.execute("INSERT INTO " + rows + " (id, note) VALUES " + many); // the heavier side is not the victim
      hs.execute("UPDATE " + rows + " SET note = 'h' WHERE id = 'r2'");
      CountDownLatch holdsR1 = new CountDownLatch(1);
      AtomicInteger deadlocks = new AtomicInteger();
      Future<Object> first = pool.submit(() -> {
        try (Connection c = database().open()) {
          return idem.execute(c, request, ctx -> {
            Connection conn = ctx.connection();
            try (Statement st = conn.createStatement()) {
              st.execute("UPDATE " + rows + " SET note = 'a' WHERE id = 'r1'");
              holdsR1.countDown();
              st.execute("UPDATE " + rows + " SET note = 'a' WHERE id = 'r2'");
              return StoredResponse.of(201, "first");
            } catch (java.sql.SQLException e) {
              deadlocks.incrementAndGet();
              return StoredResponse.of(409, "conflict");
            }
          });
        } catch (RuntimeException e) {
          return e;
        }
      });
      assertThat(holdsR1.await(30, TimeUnit.SECONDS)).isTrue();
      Future<Outcome> duplicate = pool.submit(() -> {
        try (Connection c = database().open()) {
          return idem.execute(c, request, ctx -> {
            long id = effects.insert(ctx.connection(), "dup", "{}");
            Thread.sleep(800);
            return StoredResponse.of(201, "{\"id\":" + id + "}");
          });
        }
      });
      Thread.sleep(400); // the first waits on r2, the duplicate on the first's claim
      hs.execute("UPDATE " + rows + " SET note = 'h' WHERE id = 'r1'"); // the deadlock: the first is its victim
      heavy.rollback();

      Object a = first.get(60, TimeUnit.SECONDS);
      Outcome b = duplicate.get(60, TimeUnit.SECONDS);
      assertThat(deadlocks).hasValue(1);
      assertThat(b.replayed()).isFalse();
      assertThat(a).as("the first attempt stored nothing: its writes were rolled back").isNotInstanceOf(Outcome.class);
      try (Connection c = database().open()) {
        Outcome replay = idem.execute(c, request, ctx -> StoredResponse.of(201, "third"));
        assertThat(replay.replayed()).isTrue();
        assertThat(replay.response()).isEqualTo(b.response());
      }
    } finally {
      pool.shutdownNow();
      try (Connection c = database().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + rows);
      }
    }
  }

  /**
   * Regression: under SERIALIZABLE, creates of distinct keys whose effects read what the others
   * write fail with serialization failures (SQLState 40001), at the effect or at the COMMIT; the
   * COMMIT case was reported as "outcome unknown" although the database had rolled it all back.
   */
  @Test
  void concurrentCreatesOfDistinctKeysUnderSerializableAllSucceedOnce() throws Exception {
    try (Connection c = database().open()) {
      Assumptions.assumeTrue(!Dialect.detect(c).serializesWriters(), "SQLite transactions are serializable one at a time");
    }
    AtomicInteger next = new AtomicInteger();
    // Four racers: PostgreSQL lets at least one of the conflicting transactions commit per round,
    // so four finish within Idem's five rounds whatever the interleaving.
    List<Outcome> outcomes = race(4, c -> {
      c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      String key = "k-serializable-" + next.incrementAndGet();
      return idem.execute(c, request("alice", key, "{}"), connCtx -> {
        Connection conn = connCtx.connection();
        try (PreparedStatement ps = conn.prepareStatement("SELECT COUNT(*) FROM " + effects.name() + " WHERE tag = ?")) {
          ps.setString(1, "t");
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
          }
        }
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(20);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      });
    });
    assertThat(outcomes).noneMatch(Outcome::replayed);
    assertThat(outcomes).extracting(TransactionalContract::idOf).doesNotHaveDuplicates();
    assertThat(effectCount()).isEqualTo(4);
  }

  @Test
  void retentionCountsFromCompletionSoASlowEffectStillDeduplicatesItsWaiters() throws Exception {
    // Claim-first: a retention shorter than the effect, to show it counts from completion. Key-last
    // writes the record at completion anyway, and documents that a transaction must end within the
    // retention of a racing winner's record, so it gets a retention longer than the effect.
    Duration retention = Duration.ofSeconds(strategy() == JdbcIdempotency.Strategy.KEY_LAST ? 5 : 1);
    JdbcIdempotency shortLived = builder().table(idem.table()).retention(retention).build();
    IdempotentRequest request = request("alice", "k-slow", "{}");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      CountDownLatch claimed = new CountDownLatch(1);
      Future<Outcome> slow = pool.submit(() -> {
        try (Connection c = database().open()) {
          return shortLived.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            claimed.countDown();
            long id = effects.insert(conn, "t", "{}");
            Thread.sleep(1500);
            return StoredResponse.of(201, "{\"id\":" + id + "}");
          });
        }
      });
      assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
      Future<Outcome> waiter = pool.submit(() -> {
        try (Connection c = database().open()) {
          return shortLived.execute(c, request, connCtx -> StoredResponse.of(201, "{\"id\":" + effects.insert(connCtx.connection(), "t", "{}") + "}"));
        }
      });
      Outcome first = slow.get(30, TimeUnit.SECONDS);
      Outcome second = waiter.get(30, TimeUnit.SECONDS);
      // claim-first: the waiter blocks on the slow claim and replays it; key-last: the waiter's
      // key row lands first and the slow request, once done, rolls back and replays the waiter's
      assertThat(List.of(first, second)).filteredOn(Outcome::replayed).hasSize(1);
      assertThat(idOf(second)).isEqualTo(idOf(first));
    } finally {
      pool.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void replaysInsideCallerTransactionsTakeNoLocksSoOppositeOrdersDoNotDeadlock() throws Exception {
    try (Connection c = database().open()) {
      Assumptions.assumeTrue(!Dialect.detect(c).serializesWriters(), "SQLite has a single writer: joined transactions serialize");
      create(c, request("alice", "k-x", "{}"), "{}");
      create(c, request("alice", "k-y", "{}"), "{}");
    }
    CyclicBarrier between = new CyclicBarrier(2);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<Boolean>> both = new ArrayList<>();
      for (String[] order : new String[][] {{"k-x", "k-y"}, {"k-y", "k-x"}}) {
        both.add(pool.submit(() -> {
          try (Connection c = database().open()) {
            c.setAutoCommit(false);
            boolean replayed = create(c, request("alice", order[0], "{}"), "{}").replayed();
            between.await(10, TimeUnit.SECONDS);
            replayed &= create(c, request("alice", order[1], "{}"), "{}").replayed();
            c.commit();
            return replayed;
          }
        }));
      }
      for (Future<Boolean> f : both) {
        assertThat(f.get(30, TimeUnit.SECONDS)).isTrue();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  @Test
  void concurrentDuplicatesUnderRepeatableReadStillReplay() throws Exception {
    try (Connection c = database().open()) {
      Assumptions.assumeTrue(Dialect.detect(c).supportsRepeatableRead(), "SQLite has no REPEATABLE READ level");
    }
    IdempotentRequest request = request("alice", "k-rr", "{}");
    List<Outcome> outcomes = race(12, c -> {
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      return idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        invocations.incrementAndGet();
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(200);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      });
    });
    assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void firstUseInsideAnOpenTransactionDoesNotHangAnotherThreadsFirstUse() throws Exception {
    JdbcIdempotency fresh = builder().table("fresh_" + suffix).build();
    try (Connection t1 = database().open()) {
      Assumptions.assumeTrue(!Dialect.detect(t1).ddlCommitsTransaction(),
          "MySQL's and H2's DDL commits the caller's transaction: Idem refuses to create the table inside one");
      t1.setAutoCommit(false);
      fresh.execute(t1, request("alice", "k1", "{}"), conn -> StoredResponse.of(201, "{}"));
      ExecutorService pool = Executors.newSingleThreadExecutor();
      try {
        Future<Outcome> t2 = pool.submit(() -> {
          try (Connection c = database().open()) {
            return fresh.execute(c, request("alice", "k2", "{}"), conn -> StoredResponse.of(201, "{}"));
          }
        });
        Thread.sleep(300); // let the second thread reach the table creation
        fresh.execute(t1, request("alice", "k3", "{}"), conn -> StoredResponse.of(201, "{}"));
        t1.commit();
        assertThat(t2.get(30, TimeUnit.SECONDS).replayed()).isFalse();
      } finally {
        pool.shutdownNow();
        t1.setAutoCommit(true);
        try (Statement st = t1.createStatement()) {
          st.execute("DROP TABLE IF EXISTS " + fresh.table());
        }
      }
    }
  }
}
