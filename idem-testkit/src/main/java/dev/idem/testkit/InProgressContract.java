package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.IdemListener;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.DataSourceTransactionRunner;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionRunner;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.jdbc.JdbcTarget;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: duplicates of an attempt
 * that is still running: bounded claims answer in progress at once, waiting duplicates hold no
 * connection between their attempts, and the session's lock wait is put back for the effect.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class InProgressContract extends TransactionalContract {

  /** The transactional engine on plain JDBC, with the claim's lock wait bounded. */
  private TransactionalIdempotency boundedEngine(InProgressPolicy inProgress, javax.sql.DataSource dataSource) {
    JdbcIdempotency bounded = builder().table(idem.table()).claimLockWait(Duration.ofMillis(20)).build();
    try (Connection c = database().open()) {
      // before the attempts: created inside the first attempt's transaction, the table would keep
      // the duplicate's CREATE TABLE IF NOT EXISTS waiting on that transaction's catalog lock
      bounded.createSchema(c);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return new TransactionalIdempotency(bounded, new DataSourceTransactionRunner(dataSource), IdemListener.NONE, inProgress);
  }

  private void assumeClaimsCanBeBounded() throws SQLException {
    try (Connection c = database().open()) {
      Assumptions.assumeTrue(Dialect.detect(c).boundsClaimWait(c),
          "a claim's lock wait is bounded on PostgreSQL and MariaDB only; SQLite's single writer waits its busy"
              + " timeout, and MySQL's and H2's lock wait is the session's, not one statement's");
    }
  }

  /**
   * The effect of a duplicate from another instance that arrives while the first attempt runs.
   * Claim-first never runs it: its claim meets the first attempt's row. Key-last may run it (the key
   * is recorded after the effect), and its write must be rolled back ({@link #duplicateWrites()}).
   */
  private Effect duplicateOfARunningAttempt() {
    if (strategy() == JdbcIdempotency.Strategy.CLAIM_FIRST) {
      return ctx -> {
        throw new AssertionError("a duplicate of a running attempt must not run");
      };
    }
    return ctx -> {
      effects.insert(ctx.connection(), "dup", "{}");
      return StoredResponse.of(201, "{\"id\":-1}");
    };
  }

  /** @return the committed writes of {@link #duplicateOfARunningAttempt()} */
  private long duplicateWrites() throws SQLException {
    try (Connection c = database().open()) {
      return effects.count(c, "dup");
    }
  }

  /** An effect that inserts its row, then holds its transaction open until {@code release}. */
  private Effect held(CountDownLatch entered, CountDownLatch release, String payload) {
    return ctx -> {
      invocations.incrementAndGet();
      long id = effects.insert(ctx.connection(), "t", payload);
      // Claim-first holds the key's row already. Key-last records it after the effect, so a
      // duplicate would find nothing to meet: the first attempt claims it now, as the filter does
      // before an answer streams (see underKeyLastADuplicateThatRecordsFirstWins... for the race
      // without it).
      ctx.ensureClaimed();
      entered.countDown();
      if (!release.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test never released the first attempt");
      }
      return StoredResponse.builder(201).body("{\"id\":" + id + "}").build();
    };
  }

  private static String failureOf(AttemptResult result) {
    java.io.StringWriter out = new java.io.StringWriter();
    result.failure().ifPresent(f -> f.printStackTrace(new java.io.PrintWriter(out)));
    return out.toString();
  }

  private static String scalar(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  /** Counts the connections one watched thread opens, and the most it holds open at once. */
  private static final class ConnectionCounter {
    private volatile Thread watched;
    private final AtomicInteger opens = new AtomicInteger();
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicInteger mostOpen = new AtomicInteger();
    final javax.sql.DataSource dataSource;

    ConnectionCounter(JdbcTarget target) {
      this.dataSource = dev.idem.lab.jdbc.SimpleDataSource.of(() -> counted(target.open()));
    }

    void watchThisThread() {
      watched = Thread.currentThread();
    }

    int watchedOpens() {
      return opens.get();
    }

    int watchedMostOpenAtOnce() {
      return mostOpen.get();
    }

    private Connection counted(Connection c) {
      if (Thread.currentThread() != watched) {
        return c;
      }
      opens.incrementAndGet();
      mostOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
      boolean[] closed = new boolean[1];
      return (Connection) java.lang.reflect.Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> {
            if (method.getName().equals("close") && !closed[0]) {
              closed[0] = true;
              open.decrementAndGet();
            }
            try {
              return method.invoke(c, args);
            } catch (java.lang.reflect.InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }
  }

  /**
   * Was: with bounded claims (the starter's configuration), 16 threads resending one key that had
   * completed long before got 737 answers "in progress" out of 800, since a duplicate of any attempt
   * running in the same instance, a replay included, was answered in progress without a look at the
   * key's record. A completed key is replayed, whatever else runs for it at the same moment.
   */
  @Test
  void concurrentReplaysOfACompletedKeyAreAllReplayedNeverAnsweredInProgress() throws Exception {
    IdempotentRequest request = request("alice", "k-replayed", "{\"value\":7}");
    TransactionalIdempotency bounded = boundedEngine(InProgressPolicy.failFast(), database().dataSource());
    TransactionalIdempotency unbounded = runnerEngine();
    AttemptResult first = bounded.attempt(request, creating("{\"value\":7}", 0));
    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    for (TransactionalIdempotency engine : List.of(bounded, unbounded)) {
      List<List<AttemptResult>> rounds = together(16, start -> {
        start.await(30, TimeUnit.SECONDS);
        List<AttemptResult> mine = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
          mine.add(engine.attempt(request, ctx -> {
            throw new AssertionError("a completed key must be replayed, not run again");
          }));
        }
        return mine;
      });
      List<AttemptResult> all = rounds.stream().flatMap(List::stream).toList();
      assertThat(all).hasSize(320);
      assertThat(all).extracting(AttemptResult::kind).containsOnly(AttemptResult.Kind.REPLAYED);
      assertThat(all).extracting(TransactionalContract::body).containsOnly(body(first));
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(recordCountNow()).isEqualTo(1);
  }

  /**
   * Was: on SQLite a duplicate sent while the first request ran in the same instance ran its effect
   * a second time (rolled back) and was answered with the first's response, since the engine's
   * in-instance check skipped SQLite: the conformance vector {@code core/concurrent-409} failed. On
   * every database a duplicate of an attempt running in the same instance is in progress at once
   * and never runs.
   */
  @Test
  void onEveryDatabaseADuplicateOfAnAttemptRunningInTheSameInstanceIsInProgressWithoutRunning() throws Exception {
    IdempotentRequest request = request("alice", "k-same-instance", "{\"value\":8}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.failFast(), database().dataSource());
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    AtomicInteger duplicateRuns = new AtomicInteger();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":8}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      for (int i = 0; i < 3; i++) {
        AttemptResult duplicate = engine.attempt(request, ctx -> {
          duplicateRuns.incrementAndGet();
          return StoredResponse.builder(200).body("{\"duplicate\":true}").build();
        });
        assertThat(duplicate.kind()).as(failureOf(duplicate)).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
        assertThat(duplicate.retryAfter()).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
      }
      assertThat(running.isDone()).as("the first attempt still runs").isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    assertThat(duplicateRuns).as("runs of the duplicates' effects").hasValue(0);
    assertThat(engine.attempt(request, ctx -> {
      throw new AssertionError("a completed key must be replayed");
    }).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * Was: a duplicate of a running request waited on its row lock for as long as the first attempt
   * ran, holding a pooled connection and a transaction; 30 such duplicates of a 4 s request made an
   * unrelated create wait 2.7 s for a connection.
   */
  @Test
  void aBoundedClaimAnswersInProgressAtOnceInsteadOfWaitingOnTheFirstAttemptsRow() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-busy", "{\"value\":1}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.failFast(), database().dataSource());
    // the duplicate arrives at another instance of the service: its claim meets the first's row
    TransactionalIdempotency otherInstance = boundedEngine(InProgressPolicy.failFast(), database().dataSource());
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":1}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      AttemptResult duplicate = otherInstance.attempt(request, duplicateOfARunningAttempt());
      assertThat(engine.attempt(request, ctx -> {
        throw new AssertionError("a duplicate of a running attempt must not run");
      }).kind()).as("a duplicate in the same instance").isEqualTo(AttemptResult.Kind.IN_PROGRESS);
      assertThat(duplicate.kind()).as(failureOf(duplicate)).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
      assertThat(duplicate.retryAfter()).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
      assertThat(running.isDone()).as("the first attempt still runs").isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    AttemptResult retry = engine.attempt(request, ctx -> {
      throw new AssertionError("a completed key must be replayed");
    });
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
    assertThat(duplicateWrites()).as("writes of the duplicate's run").isZero();
  }

  @Test
  void aWaitingDuplicateReplaysTheFirstAnswerHoldingNoConnectionBetweenItsAttempts() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-wait", "{\"value\":2}");
    ConnectionCounter counter = new ConnectionCounter(database());
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofSeconds(30)), counter.dataSource);
    // the duplicate arrives at another instance: it cannot see the first attempt but in the database
    TransactionalIdempotency otherInstance = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofSeconds(30)), counter.dataSource);
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<AttemptResult> running = threads.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":2}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      Future<AttemptResult> waiting = threads.submit(() -> {
        counter.watchThisThread();
        return otherInstance.attempt(request, duplicateOfARunningAttempt());
      });
      // The duplicate gives up on the row, lets its connection go, and tries again: three attempts
      // while the first still holds its transaction.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (counter.watchedOpens() < 3 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(counter.watchedOpens()).isGreaterThanOrEqualTo(3);
      assertThat(waiting.isDone()).isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      AttemptResult answered = waiting.get(30, TimeUnit.SECONDS);
      assertThat(answered.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(answered.outcome().orElseThrow().response().bodyAsString()).isEqualTo(running.get().outcome().orElseThrow().response().bodyAsString());
      assertThat(counter.watchedMostOpenAtOnce()).as("connections the waiting duplicate held at once").isEqualTo(1);
    } finally {
      release.countDown();
      threads.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
    assertThat(duplicateWrites()).as("writes of the duplicate's runs").isZero();
  }

  /**
   * Duplicates that reach the instance running the first attempt wait for it in memory: one read
   * of the key's record, then no connection and no statement until it ends; then each replays its
   * answer.
   */
  @Test
  void waitingDuplicatesInTheSameInstanceOpenNoConnectionUntilTheFirstAttemptEnds() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-local", "{\"value\":5}");
    ConnectionCounter counter = new ConnectionCounter(database());
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofSeconds(30)), counter.dataSource);
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<AttemptResult> running = threads.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":5}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      CountDownLatch waitingStarted = new CountDownLatch(1);
      Future<AttemptResult> waiting = threads.submit(() -> {
        counter.watchThisThread();
        waitingStarted.countDown();
        return engine.attempt(request, ctx -> {
          throw new AssertionError("a duplicate of a running attempt must not run");
        });
      });
      assertThat(waitingStarted.await(30, TimeUnit.SECONDS)).isTrue();
      Thread.sleep(300); // long enough for several polls, had the duplicate polled the database
      // one read of the key's record (a completed key would be replayed), then nothing until the end
      assertThat(counter.watchedOpens()).as("connections the waiting duplicate opened while the first ran").isLessThanOrEqualTo(1);
      assertThat(waiting.isDone()).isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(waiting.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    } finally {
      release.countDown();
      threads.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void aWaitingDuplicateAnswersInProgressWhenItsWaitRunsOut() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-slow", "{\"value\":3}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofMillis(200)), database().dataSource());
    TransactionalIdempotency otherInstance = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofMillis(200)), database().dataSource());
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":3}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      for (TransactionalIdempotency at : List.of(otherInstance, engine)) {
        AttemptResult duplicate = at.attempt(request, duplicateOfARunningAttempt());
        assertThat(duplicate.kind()).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
      }
      assertThat(running.isDone()).isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(duplicateWrites()).as("writes of the duplicates' runs").isZero();
  }

  /**
   * The bound is the key statement's alone in a runner's transaction too: what the transaction
   * runs after it (a JPA flush at the commit, under key-last after the key's row) waits as the
   * session says. The bound is set, saved and put back in the key statement's own round trip.
   */
  @Test
  void aBoundedKeyStatementPutsTheSessionsLockWaitBackForWhatTheTransactionRunsAfterIt() throws Exception {
    assumeClaimsCanBeBounded();
    JdbcIdempotency bounded = builder().table(idem.table()).claimLockWait(Duration.ofMillis(20)).build();
    String[] seen = new String[2];
    TransactionRunner plain = new DataSourceTransactionRunner(database().dataSource());
    TransactionRunner checking = new TransactionRunner() {
      @Override
      public javax.sql.DataSource dataSource() {
        return plain.dataSource();
      }

      @Override
      public <T> T inTransaction(Work<T> work) {
        return plain.inTransaction((connection, transaction) -> {
          try {
            String show = Dialect.detect(connection).lockWaitQuery();
            seen[0] = scalar(connection, show);
            T result = work.run(connection, transaction);
            seen[1] = scalar(connection, show); // after the key statement, before the commit
            return result;
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
        });
      }
    };
    try (Connection c = database().open()) {
      bounded.createSchema(c);
    }
    TransactionalIdempotency engine = new TransactionalIdempotency(bounded, checking, IdemListener.NONE, InProgressPolicy.failFast());
    AttemptResult result = engine.attempt(request("alice", "k-session-after", "{\"value\":5}"),
        ctx -> StoredResponse.builder(201).body("{}").build());
    assertThat(result.kind()).as(failureOf(result)).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(seen[0]).isNotNull();
    assertThat(seen[1]).as("the lock wait after the key statement, in the same transaction").isEqualTo(seen[0]);
  }

  /** The bound is the claim's alone: the effect's statements wait as the session says. */
  @Test
  void aBoundedClaimLeavesTheSessionsLockWaitToTheEffect() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-session", "{\"value\":4}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.failFast(), database().dataSource());
    String[] seen = new String[2];
    try (Connection c = database().open()) {
      String show = Dialect.detect(c).lockWaitQuery();
      seen[0] = scalar(c, show);
      AttemptResult result = engine.attempt(request, ctx -> {
        seen[1] = scalar(ctx.connection(), show);
        return StoredResponse.builder(201).body("{}").build();
      });
      assertThat(result.kind()).as(failureOf(result)).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(seen[1]).as("the lock wait the effect runs with").isEqualTo(seen[0]);
      c.setAutoCommit(false);
      AttemptResult joined = engine.attemptIn(c, request("alice", "k-session-joined", "{}"), ctx -> {
        seen[1] = scalar(ctx.connection(), show);
        return StoredResponse.builder(201).body("{}").build();
      });
      c.commit();
      assertThat(joined.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(seen[1]).as("in the caller's transaction").isEqualTo(seen[0]);
      assertThat(scalar(c, show)).as("after the caller's transaction").isEqualTo(seen[0]);
    }
  }
}
