package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * {@link TransactionalIdempotency} in {@code CLAIM_FIRST} order after a conflict (SQLState 40001,
 * MariaDB 1213) rolled its runner's transaction back, as a Galera node's certification failure
 * does to a duplicate that reached another node at the same time: the attempt runs again, so the
 * loser replays the winner's answer instead of answering "rolled back, retry". Simulated on SQLite
 * by a runner whose first commits fail with that error after rolling the work back.
 */
class TransactionalIdempotencyConflictTest {

  @TempDir Path dir;
  SQLiteDataSource dataSource;
  JdbcIdempotency keys;
  final AtomicInteger runs = new AtomicInteger();

  @BeforeEach
  void setUp() throws SQLException {
    dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    keys = JdbcIdempotency.builder().strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)");
      keys.createSchema(c);
    }
  }

  private static IdempotentRequest request() {
    return IdempotentRequest.ofJson("alice", "POST /items", "k-1", "{}".getBytes(StandardCharsets.UTF_8));
  }

  private StoredResponse insert(Connection c, String name) throws SQLException {
    runs.incrementAndGet();
    try (Statement st = c.createStatement()) {
      st.executeUpdate("INSERT INTO items (name) VALUES ('" + name + "')");
    }
    return StoredResponse.of(201, name);
  }

  private long items() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM items")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static SQLException deadlock() {
    return new SQLException("Deadlock found when trying to get lock; try restarting transaction", "40001", 1213);
  }

  /** A runner whose first {@code failures} transactions run, are rolled back, and fail at the commit with a deadlock. */
  private static final class FailingCommits implements TransactionRunner {
    final DataSourceTransactionRunner real;
    int failures;
    Runnable afterRollback = () -> { };

    FailingCommits(DataSource dataSource, int failures) {
      this.real = new DataSourceTransactionRunner(dataSource);
      this.failures = failures;
    }

    @Override
    public DataSource dataSource() {
      return real.dataSource();
    }

    @Override
    public <T> T inTransaction(Work<T> work) {
      if (failures == 0) {
        return real.inTransaction(work);
      }
      failures--;
      real.inTransaction((c, tx) -> {
        T value = work.run(c, tx);
        tx.setRollbackOnly(); // what the database does to a transaction that fails certification
        return value;
      });
      afterRollback.run();
      throw new TransactionFailedException(TransactionFailedException.Stage.COMMIT, "the commit failed: deadlock", deadlock());
    }
  }

  @Test
  void aLoserWhoseCommitFailedWithADeadlockReplaysTheWinnersAnswer() throws Exception {
    FailingCommits runner = new FailingCommits(dataSource, 1);
    TransactionalIdempotency winner = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    runner.afterRollback = () -> assertThat(winner.attempt(request(), ctx -> insert(ctx.connection(), "winner")).kind())
        .isEqualTo(AttemptResult.Kind.EXECUTED);
    TransactionalIdempotency loser = new TransactionalIdempotency(keys, runner, IdemListener.NONE);

    AttemptResult result = loser.attempt(request(), ctx -> insert(ctx.connection(), "loser"));

    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(result.outcome().orElseThrow().response().bodyAsString()).isEqualTo("winner");
    assertThat(items()).as("committed effects").isEqualTo(1);
    assertThat(runs).as("the loser's rolled-back run and the winner's").hasValue(2);
  }

  @Test
  void withoutAWinnerTheAttemptRunsAgainAndCommits() throws Exception {
    TransactionalIdempotency engine = new TransactionalIdempotency(keys, new FailingCommits(dataSource, 2), IdemListener.NONE);
    AttemptResult result = engine.attempt(request(), ctx -> insert(ctx.connection(), "mine"));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(items()).isEqualTo(1);
    assertThat(runs).hasValue(3);
  }

  @Test
  void aConflictEveryRoundIsAnsweredRolledBackAfterFiveRounds() throws Exception {
    TransactionalIdempotency engine = new TransactionalIdempotency(keys, new FailingCommits(dataSource, 100), IdemListener.NONE);
    AttemptResult result = engine.attempt(request(), ctx -> insert(ctx.connection(), "mine"));
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.ROLLED_BACK);
    assertThat(runs).hasValue(5);
    assertThat(items()).isZero();
  }

  @Test
  void anEffectRolledBackByADeadlockRunsAgainAndOnItsLastRoundItsFailureReachesTheCaller() throws Exception {
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    AtomicInteger failuresLeft = new AtomicInteger(1);
    AttemptResult result = engine.attempt(request(), ctx -> {
      StoredResponse answer = insert(ctx.connection(), "mine");
      if (failuresLeft.getAndDecrement() > 0) {
        throw deadlock(); // a brute-force abort of the effect's statement
      }
      return answer;
    });
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(runs).hasValue(2);

    runs.set(0);
    IdempotentRequest other = IdempotentRequest.ofJson("alice", "POST /items", "k-2", "{}".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> engine.attempt(other, ctx -> {
      insert(ctx.connection(), "never");
      throw deadlock();
    })).isInstanceOf(EffectFailedException.class).hasRootCauseMessage("Deadlock found when trying to get lock; try restarting transaction");
    assertThat(runs).hasValue(5);
    assertThat(items()).isEqualTo(1);
  }
}
