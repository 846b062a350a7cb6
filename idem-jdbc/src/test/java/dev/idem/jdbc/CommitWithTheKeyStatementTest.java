package dev.idem.jdbc;

import static dev.idem.jdbc.PostgresEffectDb.insertEffectRow;
import static dev.idem.jdbc.PostgresEffectDb.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * PostgreSQL, in a transaction Idem owns: the last key statement (the completion with {@code
 * CLAIM_FIRST}, the completed record with {@code KEY_LAST}) carries the {@code COMMIT} in the same
 * round trip. When that statement writes no row, the {@code COMMIT} must not run: the effect's
 * writes would commit without their key, and a retry would run the effect again.
 */
class CommitWithTheKeyStatementTest {

  @RegisterExtension final PostgresEffectDb db = new PostgresEffectDb("CREATE TABLE fx (id VARCHAR(64) PRIMARY KEY)");

  @Test
  void aCompletionThatFindsNoClaimCommitsNothing() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("carried_keys").strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      // The effect removes its own claim (as a buggy effect on the same connection could): the
      // completion then updates no row, and the COMMIT that travels with it must not run.
      assertThatThrownBy(() -> idem.execute(c, request("k-gone"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "k-gone");
        try (PreparedStatement ps = x.prepareStatement("DELETE FROM carried_keys WHERE idem_key = ?")) {
          ps.setString(1, "k-gone");
          ps.executeUpdate();
        }
        return StoredResponse.of(201, "created");
      })).isInstanceOf(IdemStoreException.class).hasMessageContaining("disappeared before completion");
      assertThat(c.getAutoCommit()).isTrue();
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx")).isZero();
    assertThat(db.count("SELECT COUNT(*) FROM carried_keys")).isZero();
  }

  @Test
  void aKeyLastRecordThatMeetsAWinnersRecordCommitsNothingAndReplaysTheWinner() throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("carried_keys").strategy(JdbcIdempotency.Strategy.KEY_LAST).build();
    JdbcIdempotency winner = JdbcIdempotency.builder().table("carried_keys").strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
    try (Connection c = db.open(); Connection other = db.open()) {
      idem.createSchema(c);
      // While this request's effect runs (after its lookup found nothing), another request with
      // the same key commits first; this one's record then inserts nothing.
      Outcome outcome = idem.execute(c, request("k-race"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "k-race-loser");
        winner.execute(other, request("k-race"), ctx -> {
          Connection w = ctx.connection();
          insertEffectRow(w, "k-race-winner");
          return StoredResponse.of(201, "winner");
        });
        return StoredResponse.of(201, "loser");
      });
      assertThat(outcome.replayed()).isTrue();
      assertThat(new String(outcome.response().body(), StandardCharsets.UTF_8)).isEqualTo("winner");
      assertThat(c.getAutoCommit()).isTrue();
    }
    assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = 'k-race-loser'")).isZero();
    assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = 'k-race-winner'")).isOne();
  }
}
