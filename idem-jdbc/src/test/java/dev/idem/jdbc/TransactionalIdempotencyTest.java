package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * Transactional mode on plain JDBC ({@link DataSourceTransactionRunner}), without any framework:
 * the effect's writes on the transaction's connection commit with the key, or not at all, and every
 * attempt's result reaches the listener.
 */
class TransactionalIdempotencyTest {

  @TempDir Path dir;
  SQLiteDataSource dataSource;
  TransactionalIdempotency engine;
  final List<String> told = new ArrayList<>();
  /** What the listener's observations saw ({@link IdemListener#started}), and each effect's run. */
  final List<String> observed = new ArrayList<>();

  @BeforeEach
  void setUp() throws SQLException {
    dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000&foreign_keys=true");
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)");
      st.execute("CREATE TABLE parents (id INTEGER PRIMARY KEY)");
      st.execute("CREATE TABLE children (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)");
    }
    IdemListener listener = new IdemListener() {
      @Override
      public Attempt started(IdempotentRequest request, String mode) {
        observed.add("started " + mode);
        return new Attempt() {
          @Override
          public void ended(AttemptResult result) {
            observed.add("ended " + result.kind());
          }

          @Override
          public void failed(Throwable error) {
            observed.add("failed " + error.getMessage());
          }
        };
      }

      @Override
      public void executed(IdempotentRequest request, Outcome outcome) {
        told.add("executed stored=" + outcome.stored());
      }

      @Override
      public void replayed(IdempotentRequest request) {
        told.add("replayed");
      }

      @Override
      public void rejected(IdempotentRequest request, String reason) {
        told.add("rejected " + reason);
      }
    };
    engine = TransactionalIdempotency.onDataSource(JdbcIdempotency.builder().build(), dataSource, listener);
  }

  private static IdempotentRequest request(String key, String body) {
    return IdempotentRequest.ofJson("alice", "POST /items", key, body.getBytes(StandardCharsets.UTF_8));
  }

  private long count(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static StoredResponse insertItem(Connection c, int status) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO items (name) VALUES ('x')")) {
      ps.executeUpdate();
    }
    return StoredResponse.of(status, "{\"status\":" + status + "}");
  }

  @Test
  void theEffectWritesOnTheTransactionsConnectionOnceAndRetriesReplay() throws Exception {
    AttemptResult first = engine.attempt(request("k1", "{}"), ctx -> {
      observed.add("effect");
      return insertItem(ctx.connection(), 201);
    });
    AttemptResult again = engine.attempt(request("k1", "{}"), ctx -> insertItem(ctx.connection(), 201));
    AttemptResult reused = engine.attempt(request("k1", "{\"other\":1}"), ctx -> insertItem(ctx.connection(), 201));

    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(again.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(again.outcome().orElseThrow().response()).isEqualTo(first.outcome().orElseThrow().response());
    assertThat(reused.kind()).isEqualTo(AttemptResult.Kind.KEY_REUSED);
    assertThat(count("items")).isEqualTo(1);
    assertThat(told).containsExactly("executed stored=true", "replayed", "rejected key-reused");
    assertThat(observed).containsExactly("started transactional", "effect", "ended EXECUTED",
        "started transactional", "ended REPLAYED", "started transactional", "ended KEY_REUSED");
  }

  @Test
  void aReleasedAnswerTakesTheEffectsWritesWithItAndTheRetryRunsAgain() throws Exception {
    AttemptResult released = engine.attempt(request("k2", "{}"), ctx -> insertItem(ctx.connection(), 503));
    assertThat(released.kind()).isEqualTo(AttemptResult.Kind.RELEASED);
    assertThat(released.outcome().orElseThrow().response().status()).isEqualTo(503);
    assertThat(count("items")).isZero();

    AttemptResult retry = engine.attempt(request("k2", "{}"), ctx -> insertItem(ctx.connection(), 201));
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(count("items")).isEqualTo(1);
    assertThat(told).containsExactly("executed stored=false", "executed stored=true");
  }

  /**
   * Was: an effect that returned {@code null} in a runner's transaction came back as a store
   * failure ({@code ROLLED_BACK}, "the transaction did not commit"), which the filter answers 503,
   * while on a connection of its own the same effect threw the {@link IllegalStateException} that
   * names the programming error. One engine now, one answer: the exception, nothing kept, and a
   * retry runs.
   */
  @Test
  void anEffectReturningNullInARunnersTransactionIsTheCallersErrorNotAStoreFailure() throws Exception {
    assertThatThrownBy(() -> engine.attempt(request("k-null", "{}"), ctx -> {
      insertItem(ctx.connection(), 201);
      return null;
    })).isInstanceOf(IllegalStateException.class).hasMessageContaining("returned null");
    assertThat(count("items")).isZero();
    assertThat(engine.attempt(request("k-null", "{}"), ctx -> insertItem(ctx.connection(), 201)).kind())
        .isEqualTo(AttemptResult.Kind.EXECUTED);
  }

  @Test
  void anEffectThatThrowsKeepsNothingAndItsExceptionReachesTheCaller() throws Exception {
    IllegalArgumentException thrown = new IllegalArgumentException("the handler's own");
    assertThatThrownBy(() -> engine.attempt(request("k3", "{}"), ctx -> {
      insertItem(ctx.connection(), 201);
      throw thrown;
    })).isSameAs(thrown);
    assertThat(observed).containsExactly("started transactional", "failed the handler's own");
    assertThat(count("items")).isZero();
    assertThat(engine.attempt(request("k3", "{}"), ctx -> insertItem(ctx.connection(), 201)).kind())
        .isEqualTo(AttemptResult.Kind.EXECUTED);
  }

  /**
   * Data the database refuses only at the commit (a deferred foreign key) is the request's own
   * failure: nothing is kept, the connection is rolled back after the failed commit (SQLite keeps
   * the transaction open otherwise), and the key is free for a corrected request.
   */
  @Test
  void dataRefusedAtTheCommitIsTheRequestsFailureAndLeavesNothingBehind() throws Exception {
    AttemptResult refused = engine.attempt(request("k4", "{}"), ctx -> {
      Connection c = ctx.connection();
      insertItem(c, 201);
      try (Statement st = c.createStatement()) {
        st.execute("INSERT INTO children (id, parent) VALUES (1, 42)");
      }
      return StoredResponse.of(201, "{}");
    });
    assertThat(refused.kind()).isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
    assertThat(refused.ran()).isTrue();
    assertThat(count("items")).isZero();
    assertThat(count("children")).isZero();
    assertThat(told).containsExactly("rejected request-failed");

    AttemptResult next = engine.attempt(request("k4", "{}"), ctx -> insertItem(ctx.connection(), 201));
    assertThat(next.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(count("items")).isEqualTo(1);
  }

  @Test
  void aDataSourceThatCannotConnectIsAStoreFailureAndNothingRuns() {
    SQLiteDataSource broken = new SQLiteDataSource();
    broken.setUrl("jdbc:sqlite:" + dir.resolve("missing").resolve("no.db"));
    TransactionalIdempotency down = TransactionalIdempotency.onDataSource(JdbcIdempotency.builder().build(), broken, IdemListener.NONE);
    AttemptResult result = down.attempt(request("k5", "{}"), ctx -> {
      throw new AssertionError("must not run");
    });
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.STORE_UNAVAILABLE);
    assertThat(result.ran()).isFalse();
  }
}
