package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
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
 * Key-last order in a runner's transaction when another attempt's record takes the key while this
 * attempt's effect runs: the work ends with a value ({@link RoundEnd.RolledBack}), the runner rolls
 * back, effect included, and the next round replays the winner. No exception steers the round, so
 * a runner whose rollback fails (Spring reports it after a rollback-only work as a failure of the
 * transaction's end) must not turn the replay into a failure: nothing committed either way.
 */
class KeyLastKeyTakenTest {

  @TempDir Path dir;
  SQLiteDataSource dataSource;
  JdbcIdempotency keys;

  @BeforeEach
  void setUp() throws SQLException {
    dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)");
    }
    keys = JdbcIdempotency.builder().strategy(JdbcIdempotency.Strategy.KEY_LAST).build();
  }

  private static IdempotentRequest request() {
    return IdempotentRequest.ofJson("alice", "POST /items", "k-1", "{}".getBytes(StandardCharsets.UTF_8));
  }

  private static StoredResponse insertItem(Connection c, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO items (name) VALUES (?)")) {
      ps.setString(1, name);
      ps.executeUpdate();
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

  /** Runs {@code engine}'s attempt whose effect lets a winner on another engine record the key first. */
  private AttemptResult loseTo(TransactionalIdempotency engine, TransactionalIdempotency winner, AtomicInteger loserRuns) {
    return engine.attempt(request(), ctx -> {
      if (loserRuns.incrementAndGet() == 1) {
        // Before this attempt writes anything (SQLite's deferred transaction holds no lock yet),
        // another instance runs the same key to its commit.
        assertThat(winner.attempt(request(), w -> insertItem(w.connection(), "winner")).kind())
            .isEqualTo(AttemptResult.Kind.EXECUTED);
      }
      return insertItem(ctx.connection(), "loser");
    });
  }

  @Test
  void aKeyRecordedByAnotherAttemptWhileTheEffectRanRollsTheEffectBackAndReplaysTheWinner() throws SQLException {
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    TransactionalIdempotency winner = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    AtomicInteger loserRuns = new AtomicInteger();

    AttemptResult result = loseTo(engine, winner, loserRuns);

    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(new String(result.outcome().orElseThrow().response().body(), StandardCharsets.UTF_8)).isEqualTo("winner");
    assertThat(loserRuns).hasValue(1);
    assertThat(items()).as("the loser's effect rolled back with its transaction").isEqualTo(1);
  }

  @Test
  void aKeyTakenWhoseRollbackFailsStillReplaysTheWinner() throws SQLException {
    TransactionRunner failingRollback = new FailingRollbackRunner(dataSource);
    TransactionalIdempotency engine = new TransactionalIdempotency(keys, failingRollback, IdemListener.NONE);
    TransactionalIdempotency winner = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    AtomicInteger loserRuns = new AtomicInteger();

    AttemptResult result = loseTo(engine, winner, loserRuns);

    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(new String(result.outcome().orElseThrow().response().body(), StandardCharsets.UTF_8)).isEqualTo("winner");
    assertThat(items()).isEqualTo(1);
  }

  /**
   * As Spring's runner behaves when the rollback itself fails: after work that threw, the work's
   * exception; after work that asked for the rollback, a failure of the transaction's end.
   */
  private static final class FailingRollbackRunner implements TransactionRunner {
    private final DataSourceTransactionRunner inner;

    FailingRollbackRunner(DataSource dataSource) {
      this.inner = new DataSourceTransactionRunner(dataSource);
    }

    @Override
    public DataSource dataSource() {
      return inner.dataSource();
    }

    @Override
    public <T> T inTransaction(Work<T> work) {
      boolean[] rollbackOnly = new boolean[1];
      T value = inner.inTransaction((connection, transaction) -> work.run(connection, () -> {
        rollbackOnly[0] = true;
        transaction.setRollbackOnly();
      }));
      if (rollbackOnly[0]) {
        throw new TransactionFailedException(TransactionFailedException.Stage.COMMIT, "the rollback failed",
            new SQLException("connection reset", "08006"));
      }
      return value;
    }
  }
}
