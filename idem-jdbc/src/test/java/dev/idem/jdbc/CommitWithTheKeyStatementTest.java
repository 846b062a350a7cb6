package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * PostgreSQL, in a transaction Idem owns: the last key statement (the completion with {@code
 * CLAIM_FIRST}, the completed record with {@code KEY_LAST}) carries the {@code COMMIT} in the same
 * round trip. When that statement writes no row, the {@code COMMIT} must not run: the effect's
 * writes would commit without their key, and a retry would run the effect again.
 */
class CommitWithTheKeyStatementTest {

  private TestDb db;

  @BeforeEach
  void create() throws Exception {
    db = TestDb.create(TestDb.Kind.POSTGRESQL);
    try (Connection c = db.open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE fx (id VARCHAR(64) PRIMARY KEY)");
    }
  }

  @AfterEach
  void drop() throws Exception {
    db.drop();
  }

  private static IdempotentRequest request(String key) {
    return IdempotentRequest.ofJson("p", "op", key, "{\"a\":1}".getBytes(StandardCharsets.UTF_8));
  }

  private static void insertEffectRow(Connection c, String id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO fx (id) VALUES (?)")) {
      ps.setString(1, id);
      ps.executeUpdate();
    }
  }

  private long count(String sql) throws SQLException {
    try (Connection c = db.open(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void aCompletionThatFindsNoClaimCommitsNothing() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("carried_keys").build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      // The effect removes its own claim (as a buggy effect on the same connection could): the
      // completion then updates no row, and the COMMIT that travels with it must not run.
      assertThatThrownBy(() -> idem.execute(c, request("k-gone"), x -> {
        insertEffectRow(x, "k-gone");
        try (PreparedStatement ps = x.prepareStatement("DELETE FROM carried_keys WHERE idem_key = ?")) {
          ps.setString(1, "k-gone");
          ps.executeUpdate();
        }
        return StoredResponse.of(201, "created");
      })).isInstanceOf(IdemStoreException.class).hasMessageContaining("disappeared before completion");
      assertThat(c.getAutoCommit()).isTrue();
    }
    assertThat(count("SELECT COUNT(*) FROM fx")).isZero();
    assertThat(count("SELECT COUNT(*) FROM carried_keys")).isZero();
  }

  @Test
  void aKeyLastRecordThatMeetsAWinnersRecordCommitsNothingAndReplaysTheWinner() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("carried_keys").strategy(JdbcIdempotency.Strategy.KEY_LAST).build();
    JdbcIdempotency winner = JdbcIdempotency.builder().table("carried_keys").build();
    try (Connection c = db.open(); Connection other = db.open()) {
      idem.createSchema(c);
      // While this request's effect runs (after its lookup found nothing), another request with
      // the same key commits first; this one's record then inserts nothing.
      Outcome outcome = idem.execute(c, request("k-race"), x -> {
        insertEffectRow(x, "k-race-loser");
        winner.execute(other, request("k-race"), w -> {
          insertEffectRow(w, "k-race-winner");
          return StoredResponse.of(201, "winner");
        });
        return StoredResponse.of(201, "loser");
      });
      assertThat(outcome.replayed()).isTrue();
      assertThat(new String(outcome.response().body(), StandardCharsets.UTF_8)).isEqualTo("winner");
      assertThat(c.getAutoCommit()).isTrue();
    }
    assertThat(count("SELECT COUNT(*) FROM fx WHERE id = 'k-race-loser'")).isZero();
    assertThat(count("SELECT COUNT(*) FROM fx WHERE id = 'k-race-winner'")).isOne();
  }
}
