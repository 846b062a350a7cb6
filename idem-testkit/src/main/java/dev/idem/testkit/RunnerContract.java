package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Part of the {@linkplain TransactionalContract transactional contract}: transactional mode as the
 * servlet filter and the Spring starter run it: {@link dev.idem.jdbc.TransactionalIdempotency}
 * opening each attempt's transaction on a {@link dev.idem.jdbc.TransactionRunner}.
 *
 * <p>A store's test runs it by subclassing (usually as a JUnit {@code @Nested} class, see {@link
 * TransactionalContract}) and returning its database and write order from {@link #target()}.
 */
public abstract class RunnerContract extends TransactionalContract {

  private List<AttemptResult> raceAttempts(int racers, java.util.concurrent.Callable<AttemptResult> attempt) throws Exception {
    return together(racers, start -> {
      start.await(30, TimeUnit.SECONDS);
      return attempt.call();
    });
  }

  @Test
  void inARunnersTransactionALostResponseRetryReplaysAndTheEffectCommitsOnce() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-lost", "{\"value\":1}");
    AttemptResult first = engine.attempt(request, creating("{\"value\":1}", 0));
    AttemptResult retry = engine.attempt(request, ctx -> {
      throw new AssertionError("a stored answer must be replayed, not run again");
    });
    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(retry.outcome().orElseThrow().response()).isEqualTo(first.outcome().orElseThrow().response());
    assertThat(effectCount()).isEqualTo(1);
    assertThat(recordCountNow()).isEqualTo(1);
  }

  @Test
  void inARunnersTransactionConcurrentDuplicatesCommitOneEffectAndAllGetItsAnswer() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-race", "{\"value\":2}");
    List<AttemptResult> results = raceAttempts(8, () -> engine.attempt(request, creating("{\"value\":2}", 50)));
    assertThat(results).extracting(AttemptResult::kind)
        .containsOnly(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED)
        .filteredOn(k -> k == AttemptResult.Kind.EXECUTED).hasSize(1);
    assertThat(results).extracting(TransactionalContract::body).containsOnly(body(results.get(0)));
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * An effect with a unique constraint of its own: under key-last a racing duplicate's effect fails
   * on the winner's row (or deadlocks on it) before it reaches the key; it must still get the
   * winner's answer, never the failure.
   */
  @Test
  void inARunnersTransactionADuplicateWhoseEffectFailsOnTheWinnersRowsReplaysTheWinner() throws Exception {
    String unique = "uniq_" + suffix;
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + unique + " (name VARCHAR(100) PRIMARY KEY)");
    }
    try {
      TransactionalIdempotency engine = runnerEngine();
      IdempotentRequest request = request("alice", "k-runner-unique", "{\"name\":\"x\"}");
      List<AttemptResult> results = raceAttempts(8, () -> engine.attempt(request, ctx -> {
        Connection conn = ctx.connection();
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + unique + " (name) VALUES ('x')")) {
          ps.executeUpdate();
        }
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(100);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(results).extracting(AttemptResult::kind)
          .containsOnly(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED)
          .filteredOn(k -> k == AttemptResult.Kind.EXECUTED).hasSize(1);
      assertThat(results).extracting(TransactionalContract::body).containsOnly(body(results.get(0)));
    } finally {
      try (Connection c = database().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + unique);
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * The filter claims the key just before the first byte of an answer that streams to the client
   * ({@link dev.idem.core.EffectContext#ensureClaimed()}). A duplicate that runs meanwhile must
   * never answer on its own, even when its handler catches the refusal and answers something: it
   * replays the first attempt's answer, and only the first attempt's writes commit.
   */
  @Test
  void inARunnersTransactionAnAnswerThatClaimedTheKeyIsTheOneADuplicateReplays() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-stream", "{\"value\":3}");
    CountDownLatch claimed = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean refused = new java.util.concurrent.atomic.AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<AttemptResult> first = pool.submit(() -> engine.attempt(request, ctx -> {
        long id = effects.insert(ctx.connection(), "t", "first");
        ctx.ensureClaimed();
        ctx.ensureClaimed(); // a second call returns at once
        claimed.countDown();
        if (!release.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
      Future<AttemptResult> second = pool.submit(() -> engine.attempt(request, ctx -> {
        effects.insert(ctx.connection(), "t", "second");
        try {
          ctx.ensureClaimed();
        } catch (dev.idem.core.RequestInProgressException e) {
          refused.set(true);
          return StoredResponse.of(500, "the handler caught the refusal and answered");
        }
        return StoredResponse.of(201, "{\"id\":-1}");
      }));
      Thread.sleep(300); // the duplicate is now running, or waiting for the first's locks
      release.countDown();
      AttemptResult one = first.get(60, TimeUnit.SECONDS);
      AttemptResult two = second.get(60, TimeUnit.SECONDS);
      assertThat(one.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(two.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(body(two)).isEqualTo(body(one));
    } finally {
      pool.shutdownNow();
    }
    if (strategy() == JdbcIdempotency.Strategy.KEY_LAST) {
      assertThat(refused).as("key-last: the duplicate's claim met the first attempt's").isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
    try (Connection c = database().open(); PreparedStatement ps = c.prepareStatement(
        "SELECT COUNT(*) FROM " + effects.name() + " WHERE payload = 'second'")) {
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getLong(1)).as("the duplicate's writes were rolled back").isZero();
      }
    }
  }

  /**
   * Key-last records the key after the effect: a duplicate from another instance that runs while
   * the first attempt's effect still runs (and has not claimed the key) can record first. Then it is
   * the winner: the first attempt rolls back, effect included, and replays the duplicate's answer.
   * One committed effect, one answer for both.
   */
  @Test
  void underKeyLastADuplicateThatRecordsFirstWinsAndTheFirstAttemptReplaysIt() throws Exception {
    Assumptions.assumeTrue(strategy() == JdbcIdempotency.Strategy.KEY_LAST, "claim-first: the first attempt holds the key from its start");
    try (Connection c = database().open()) {
      Assumptions.assumeTrue(!Dialect.detect(c).serializesWriters(),
          "SQLite has one writer: no duplicate writes while the first attempt's transaction has written");
    }
    TransactionalIdempotency engine = runnerEngine();
    TransactionalIdempotency otherInstance = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-overtaken", "{\"value\":8}");
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, ctx -> {
        long id = effects.insert(ctx.connection(), "slow", "{}");
        entered.countDown();
        if (!release.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      AttemptResult duplicate = otherInstance.attempt(request, creating("{\"value\":8}", 0));
      assertThat(duplicate.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      release.countDown();
      AttemptResult overtaken = running.get(30, TimeUnit.SECONDS);
      assertThat(overtaken.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(body(overtaken)).isEqualTo(body(duplicate));
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    try (Connection c = database().open()) {
      assertThat(effects.count(c, "slow")).as("the overtaken attempt's write was rolled back").isZero();
    }
  }

  @Test
  void inARunnersTransactionAFailureAnswerIsReleasedWithItsWritesAndARetryRunsAgain() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-503", "{\"value\":4}");
    AttemptResult failed = engine.attempt(request, ctx -> {
      effects.insert(ctx.connection(), "t", "{\"value\":4}");
      return StoredResponse.of(503, "try later");
    });
    assertThat(failed.kind()).isEqualTo(AttemptResult.Kind.RELEASED);
    assertThat(effectCount()).isZero();
    AttemptResult again = engine.attempt(request, creating("{\"value\":4}", 0));
    assertThat(again.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void inARunnersTransactionAnEffectThatThrowsLeavesNothingAndTheExceptionReachesTheCaller() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-throws", "{\"value\":5}");
    assertThatThrownBy(() -> engine.attempt(request, ctx -> {
      effects.insert(ctx.connection(), "t", "{\"value\":5}");
      throw new IllegalStateException("the handler's bug");
    })).isInstanceOf(IllegalStateException.class).hasMessage("the handler's bug");
    assertThat(effectCount()).isZero();
    assertThat(recordCountNow()).isZero();
    assertThat(engine.attempt(request, creating("{\"value\":5}", 0)).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
  }

  @Test
  void inARunnersTransactionAKeyReusedWithAnotherPayloadIsRefusedAndRunsNothing() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    assertThat(engine.attempt(request("alice", "k-runner-reuse", "{\"value\":6}"), creating("{\"value\":6}", 0)).kind())
        .isEqualTo(AttemptResult.Kind.EXECUTED);
    AttemptResult reused = engine.attempt(request("alice", "k-runner-reuse", "{\"value\":7}"), ctx -> {
      throw new AssertionError("a reused key must not run");
    });
    assertThat(reused.kind()).isEqualTo(AttemptResult.Kind.KEY_REUSED);
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * A handler that catches its own unique violation and answers 409: on PostgreSQL the error
   * aborted the transaction, so the key cannot be recorded beside it; the answer is stored alone
   * and replayed. A success answered after such an error is refused on PostgreSQL, where its writes
   * cannot commit.
   */
  @Test
  void inARunnersTransactionAClientErrorAfterACaughtSqlErrorIsStoredAndASuccessOnlyWhereItsWritesCommit() throws Exception {
    String users = "users_" + suffix;
    boolean abortsOnError;
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      abortsOnError = Dialect.detect(c).abortsTransactionOnError();
    }
    try {
      TransactionalIdempotency engine = runnerEngine();
      IdempotentRequest signup = request("alice", "k-runner-signup", "{\"email\":\"ann@example.com\"}");
      AttemptResult first = engine.attempt(signup, ctx -> register(ctx.connection(), users, "ann@example.com"));
      assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(first.outcome().orElseThrow().response().status()).isEqualTo(409);
      AttemptResult again = engine.attempt(signup, ctx -> {
        throw new AssertionError("a stored answer must be replayed, not run again");
      });
      assertThat(again.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(again.outcome().orElseThrow().response().status()).isEqualTo(409);

      IdempotentRequest success = request("alice", "k-runner-success", "{\"email\":\"ann@example.com\"}");
      AttemptResult answered = engine.attempt(success, ctx -> {
        register(ctx.connection(), users, "ann@example.com");
        return StoredResponse.of(201, "registered anyway");
      });
      if (abortsOnError) {
        assertThat(answered.kind()).as("the request's own failure: a retry would do the same").isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
        assertThat(answered.outcome()).isEmpty();
      } else {
        assertThat(answered.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      }
      assertThat(recordCountNow()).isEqualTo(abortsOnError ? 1 : 2);
    } finally {
      try (Connection c = database().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }
}
