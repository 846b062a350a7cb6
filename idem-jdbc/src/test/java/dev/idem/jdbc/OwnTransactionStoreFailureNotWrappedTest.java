package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * {@code execute} on a connection in auto-commit (a transaction Idem owns), when Idem's own key
 * statement after the effect fails: the caller gets the store's failure as {@code execute} threw
 * it before the transactional engine became one ({@code idempotency store (table): storing the
 * response failed: ...}, the driver's {@link SQLException} as its cause). Was: that failure
 * wrapped once more ({@code the transaction did not commit: idempotency store ...}), its
 * SQLException one cause further down, as the engine reports it for {@code
 * TransactionalIdempotency}'s result.
 */
class OwnTransactionStoreFailureNotWrappedTest {

  @Test
  void aCompletionThatFindsNoClaimThrowsTheStoresFailureUnwrapped() throws SQLException {
    String url = "jdbc:h2:mem:unwrapped_" + UUID.randomUUID().toString().replace("-", "") + ";DB_CLOSE_DELAY=-1";
    JdbcIdempotency idem = JdbcIdempotency.builder().table("own_keys").strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
    IdempotentRequest request = IdempotentRequest.ofJson("alice", "POST /items", "k-gone", "{}".getBytes(StandardCharsets.UTF_8));
    try (Connection c = DriverManager.getConnection(url)) {
      idem.createSchema(c);
      // The effect removes its own claim (as a buggy effect on the same connection could): the
      // completion then updates no row.
      Throwable thrown = catchThrowable(() -> idem.execute(c, request, ctx -> {
        try (PreparedStatement ps = ctx.connection().prepareStatement("DELETE FROM own_keys WHERE idem_key = ?")) {
          ps.setString(1, "k-gone");
          ps.executeUpdate();
        }
        return StoredResponse.of(201, "created");
      }));
      assertThat(thrown).isExactlyInstanceOf(IdemStoreException.class)
          .hasMessageStartingWith("idempotency store (own_keys): storing the response failed")
          .hasCauseInstanceOf(SQLException.class);
      assertThat(c.getAutoCommit()).isTrue();
    }
  }
}
