package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Where lease mode writes a record's expiry: once, at the claim ({@code lease + retention} after
 * it), and again at the completion only when {@code retention} from then is later, such as for a
 * claim written by an earlier version (which wrote {@code retention} after the claim).
 */
class LeaseExpiryTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void theExpiryIsWrittenOnceAtTheClaimAndMovedOnlyWhenACompletionNeedsIt(TestDb.Kind kind) throws Exception {
    TestDb db = TestDb.create(kind);
    CountingDataSource ds = new CountingDataSource(db::open);
    try {
      JdbcLeaseStore store = JdbcLeaseStore.builder(ds).table("expiry_keys").build();
      IdempotentRequest r = request();
      store.claim(r, "owner", LEASE, RETENTION);
      long[] claimed = times(ds, r);
      // created_at and expires_at come from separate evaluations of the clock on PostgreSQL
      assertThat(claimed[1] - claimed[0]).isBetween(LEASE.plus(RETENTION).toMillis(), LEASE.plus(RETENTION).toMillis() + 5);

      assertThat(store.complete(r.scope(), r.key(), "owner", StoredResponse.of(201, "done"), RETENTION)).isTrue();
      assertThat(times(ds, r)[1]).as("a completion within the lease leaves the expiry alone").isEqualTo(claimed[1]);

      IdempotentRequest old = request();
      store.claim(old, "owner", LEASE, RETENTION);
      try (Connection c = ds.getConnection();
          PreparedStatement ps = c.prepareStatement("UPDATE expiry_keys SET expires_at = created_at + ? WHERE idem_key = ?")) {
        ps.setLong(1, 1000); // an expiry that a completion must move: retention from now is later
        ps.setString(2, old.key().value());
        ps.executeUpdate();
      }
      long before = times(ds, old)[2];
      assertThat(store.complete(old.scope(), old.key(), "owner", StoredResponse.of(201, "done"), RETENTION)).isTrue();
      assertThat(times(ds, old)[1]).as("moved to retention after the completion").isGreaterThanOrEqualTo(before + RETENTION.toMillis());
    } finally {
      ds.close();
      db.drop();
    }
  }

  /** @return {created_at, expires_at, the database's now} */
  private static long[] times(CountingDataSource ds, IdempotentRequest r) throws Exception {
    Dialect dialect;
    try (Connection c = ds.getConnection()) {
      dialect = Dialect.of(c);
      try (PreparedStatement ps = c.prepareStatement(
          "SELECT created_at, expires_at, " + dialect.nowMillis() + " FROM expiry_keys WHERE idem_key = ?")) {
        ps.setString(1, r.key().value());
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          return new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)};
        }
      }
    }
  }

  private static IdempotentRequest request() {
    return IdempotentRequest.ofJson("p", "op", UUID.randomUUID().toString(), "{}".getBytes(StandardCharsets.UTF_8));
  }
}
