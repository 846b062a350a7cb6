package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Regression: {@link JdbcIdempotency#execute(IdempotentRequest, dev.idem.core.Effect)} on a data
 * source whose connections come with auto-commit off (a pool configured so, as HikariCP's {@code
 * autoCommit=false} often is beside JPA) took the borrowed connection for a caller's transaction,
 * ran the effect and the key in it, and closed it without a commit: it answered "executed" for an
 * effect that the pool then rolled back. A borrowed connection is Idem's own: it runs in a
 * transaction Idem commits.
 */
class PoolWithAutoCommitOffTest {

  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void aBorrowedConnectionWithAutoCommitOffIsCommitted(TestDb.Kind kind) throws Exception {
    TestDb db = TestDb.create(kind);
    CountingDataSource ds = new CountingDataSource(() -> {
      Connection c = db.open();
      c.setAutoCommit(false);
      return c;
    });
    try {
      try (Connection c = db.open(); Statement st = c.createStatement()) {
        st.execute("CREATE TABLE pooled_notes (id VARCHAR(64) PRIMARY KEY)");
      }
      JdbcIdempotency idem = JdbcIdempotency.builder().table("pooled_keys").dataSource(ds).build();
      IdempotentRequest r = IdempotentRequest.ofJson("p", "op", UUID.randomUUID().toString(), "{}".getBytes(StandardCharsets.UTF_8));
      Outcome first = idem.execute(r, ctx -> {
        try (Statement st = ctx.connection().createStatement()) {
          st.executeUpdate("INSERT INTO pooled_notes (id) VALUES ('n1')");
        }
        return StoredResponse.of(201, "n1");
      });
      assertThat(first.replayed()).isFalse();
      ds.close(); // as a pool that rolls back what a returned connection left open
      try (Connection other = db.open(); Statement st = other.createStatement();
          ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM pooled_notes")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getLong(1)).as("the effect, committed").isEqualTo(1);
      }
      assertThat(idem.status(r.scope(), r.key())).isInstanceOf(KeyStatus.Completed.class);
      Outcome again = idem.execute(r, ctx -> {
        throw new AssertionError("an answered key ran twice");
      });
      assertThat(again.replayed()).isTrue();
    } finally {
      ds.close();
      db.drop();
    }
  }
}
