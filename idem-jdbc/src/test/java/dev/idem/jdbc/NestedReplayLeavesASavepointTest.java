package dev.idem.jdbc;

import static dev.idem.jdbc.PostgresEffectDb.insertEffectRow;
import static dev.idem.jdbc.PostgresEffectDb.request;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * PostgreSQL, caller's transaction: an effect that calls Idem again on its own connection (an
 * idempotent operation inside another). The inner call sets the savepoint {@code
 * idem_before_effect} in its claim's round trip, and since the lookup travels with the claim it sets
 * it for a replay too. Left in place, it shadows the outer call's savepoint of the same name: when
 * the outer effect then catches an SQL error and answers a client error, the rollback to the
 * savepoint stops at the inner one, and the outer effect's writes made before the inner call
 * commit with an answer that says they did not happen.
 */
class NestedReplayLeavesASavepointTest {

  @RegisterExtension final PostgresEffectDb db = new PostgresEffectDb("CREATE TABLE fx (id VARCHAR(64) PRIMARY KEY); INSERT INTO fx VALUES ('taken')");

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void anOuterClientErrorRollsBackTheOuterWritesAfterAnInnerCall(boolean innerReplays) throws Exception {
    JdbcIdempotency idem = JdbcIdempotency.builder().table("keys").build();
    try (Connection c = db.open()) {
      idem.createSchema(c);
      if (innerReplays) {
        idem.execute(c, request("inner"), x -> StoredResponse.of(200, "inner"));
      }
      c.setAutoCommit(false);
      Outcome outer = idem.execute(c, request("outer"), xCtx -> {
        Connection x = xCtx.connection();
        insertEffectRow(x, "outer-before-inner");
        idem.execute(x, request("inner"), ctx -> {
          Connection y = ctx.connection();
          insertEffectRow(y, "inner-effect");
          return StoredResponse.of(200, "inner");
        });
        try {
          insertEffectRow(x, "taken"); // a unique violation the effect catches and answers
        } catch (SQLException e) {
          return StoredResponse.of(409, "conflict");
        }
        return StoredResponse.of(201, "created");
      });
      assertThat(outer.response().status()).isEqualTo(409);
      c.commit();
      c.setAutoCommit(true);
    }
    // The 409 is stored without the outer effect's writes: none of them commits.
    assertThat(db.count("SELECT COUNT(*) FROM fx WHERE id = 'outer-before-inner'")).isZero();
    assertThat(db.count("SELECT COUNT(*) FROM keys WHERE idem_key = 'outer' AND status = 409")).isOne();
  }
}
