package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Key-last order in a transaction Idem owns ({@code execute} on a connection in auto-commit), when
 * the effect answers something the response policy does not store (a 503) after a racing winner
 * recorded the key: the winner's record answers, as it does in a runner's transaction. Was: the
 * duplicate's own 503 reached the client, although the operation had succeeded, once key-last
 * became the default order.
 */
class KeyLastUnstoredAnswerTest {

  private static IdempotentRequest request() {
    return IdempotentRequest.ofJson("alice", "POST /items", "k-1", "{}".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void anUnstoredAnswerAfterAWinnerRecordedTheKeyReplaysTheWinnerInIdemsOwnTransaction() throws SQLException {
    String url = "jdbc:h2:mem:keylast_" + UUID.randomUUID().toString().replace("-", "") + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000";
    JdbcIdempotency keys = JdbcIdempotency.builder().strategy(JdbcIdempotency.Strategy.KEY_LAST).build();
    try (Connection loser = DriverManager.getConnection(url); Connection other = DriverManager.getConnection(url)) {
      keys.createSchema(loser);
      Outcome outcome = keys.execute(loser, request(), ctx -> {
        // The duplicate's lookup found nothing; while its effect runs, the winner commits the key.
        Outcome won = keys.execute(other, request(), w -> StoredResponse.of(201, "created by the winner"));
        assertThat(won.kind()).isEqualTo(Outcome.Kind.EXECUTED);
        // The duplicate's effect then fails on the winner's rows and answers it as a 503.
        return StoredResponse.of(503, "the item was taken meanwhile");
      });
      assertThat(outcome.kind()).isEqualTo(Outcome.Kind.REPLAYED);
      assertThat(outcome.response().status()).isEqualTo(201);
      assertThat(new String(outcome.response().body(), StandardCharsets.UTF_8)).isEqualTo("created by the winner");
    }
  }
}
