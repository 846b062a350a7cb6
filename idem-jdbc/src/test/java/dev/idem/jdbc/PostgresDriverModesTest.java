package dev.idem.jdbc;

import static dev.idem.jdbc.PostgresEffectDb.assertIdle;
import static dev.idem.jdbc.PostgresEffectDb.insertEffectRow;
import static dev.idem.jdbc.PostgresEffectDb.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * PostgreSQL with pgjdbc settings that change how the merged statements travel: the simple query
 * protocol ({@code preferQueryMode=simple}, parameters inlined, one Query message) and automatic
 * savepoints ({@code autosave=always}, {@code cleanupSavepoints=true}). The carried {@code COMMIT}
 * must still not run when the key statement wrote no row, and the connection must come back in
 * auto-commit mode with no transaction open. And a connection marked read-only: a replay, which
 * writes nothing, must not be refused because the lookup travels with the claim's INSERT.
 */
class PostgresDriverModesTest {

  @RegisterExtension final PostgresEffectDb db = new PostgresEffectDb("CREATE TABLE fx (id VARCHAR(64) PRIMARY KEY)");

  @ParameterizedTest
  @ValueSource(strings = {"preferQueryMode=simple", "autosave=always&cleanupSavepoints=true", "prepareThreshold=1"})
  void theCarriedCommitHoldsInEveryDriverMode(String params) throws Exception {
    for (JdbcIdempotency.Strategy strategy : JdbcIdempotency.Strategy.values()) {
      String s = strategy.name();
      JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").strategy(strategy).build();
      try (Connection c = db.open(params); Connection other = db.open(params)) {
        idem.createSchema(c);
        for (int i = 0; i < 7; i++) { // past prepareThreshold: server-side prepared statements
          String key = s + "-k" + i;
          Outcome created = idem.execute(c, request(key), xCtx -> {
            Connection x = xCtx.connection();
            insertEffectRow(x, key);
            return StoredResponse.of(201, key);
          });
          assertThat(created.replayed()).isFalse();
          assertIdle(c);
          Outcome replayed = idem.execute(c, request(key), x -> StoredResponse.of(500, "must not run"));
          assertThat(replayed.replayed()).isTrue();
          assertIdle(c);
          // The caller's transaction too.
          c.setAutoCommit(false);
          assertThat(idem.execute(c, request(key), x -> StoredResponse.of(500, "must not run")).replayed()).isTrue();
          Outcome inCaller = idem.execute(c, request(key + "-c"), xCtx -> {
            Connection x = xCtx.connection();
            insertEffectRow(x, key + "-c");
            return StoredResponse.of(201, key);
          });
          assertThat(inCaller.replayed()).isFalse();
          c.commit();
          c.setAutoCommit(true);
        }
        if (strategy == JdbcIdempotency.Strategy.CLAIM_FIRST) {
          assertThatThrownBy(() -> idem.execute(c, request("gone"), xCtx -> {
            Connection x = xCtx.connection();
            insertEffectRow(x, "gone");
            try (Statement st = x.createStatement()) {
              st.executeUpdate("DELETE FROM keys WHERE idem_key = 'gone'");
            }
            return StoredResponse.of(201, "gone");
          })).isInstanceOf(IdemStoreException.class);
          assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = 'gone'")).isZero();
        } else {
          JdbcIdempotency winner = JdbcIdempotency.builder().table("keys").build();
          Outcome o = idem.execute(c, request("race"), xCtx -> {
            Connection x = xCtx.connection();
            insertEffectRow(x, "race-loser");
            winner.execute(other, request("race"), ctx -> {
              Connection w = ctx.connection();
              insertEffectRow(w, "race-winner");
              return StoredResponse.of(201, "winner");
            });
            return StoredResponse.of(201, "loser");
          });
          assertThat(o.replayed()).isTrue();
          assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = 'race-loser'")).isZero();
        }
        assertIdle(c);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aReplayOnAReadOnlyConnectionIsNotRefusedByTheMergedClaimsInsert(boolean callersTransaction) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    try (Connection c = db.open()) {
      idem.execute(c, request("ro"), x -> StoredResponse.of(201, "stored"));
    }
    try (Connection c = db.open()) {
      c.setReadOnly(true);
      c.setAutoCommit(!callersTransaction);
      Outcome o = idem.execute(c, request("ro"), x -> StoredResponse.of(500, "must not run"));
      assertThat(o.replayed()).isTrue();
      assertThat(new String(o.response().body(), StandardCharsets.UTF_8)).isEqualTo("stored");
      if (callersTransaction) {
        c.commit();
      }
    }
  }
}
