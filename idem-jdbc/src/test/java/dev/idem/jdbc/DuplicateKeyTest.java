package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.jdbc.dialect.KeyTableSql;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * How each database reports a duplicate key, decided in one place ({@link KeyTableSql#isDuplicateKey})
 * for both engines. Before, transactional mode and lease mode each had a copy, and on MySQL they
 * disagreed: lease mode took only vendor code 1062, transactional mode 1062 or any SQLState 23000
 * whose message contained "Duplicate" (English only: the server translates messages per {@code
 * lc_messages}).
 */
class DuplicateKeyTest {

  private static final String INSERT =
      "INSERT INTO dup_keys (principal, operation, idem_key, fingerprint, state, created_at, expires_at) VALUES (?, ?, ?, ?, 'IN_PROGRESS', 0, 0)";

  private static SQLException duplicateOn(TestDb db, Dialect dialect, String fingerprint) throws Exception {
    try (Connection c = db.open()) {
      JdbcIdempotency.builder().table("dup_keys").build().createSchema(c);
      String key = UUID.randomUUID().toString();
      try (PreparedStatement ps = c.prepareStatement(INSERT)) {
        ps.setString(1, "p");
        ps.setString(2, "op");
        ps.setString(3, key);
        ps.setString(4, "0".repeat(64));
        ps.executeUpdate();
        ps.setString(4, fingerprint);
        ps.executeUpdate();
      } catch (SQLException e) {
        return e;
      }
    }
    throw new AssertionError("the second INSERT of one key succeeded on " + dialect);
  }

  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void aRealDuplicateKeyIsRecognisedOnEveryDialect(TestDb.Kind kind) throws Exception {
    TestDb db = TestDb.create(kind);
    try {
      Dialect dialect;
      try (Connection c = db.open()) {
        dialect = Dialect.of(c);
      }
      SQLException duplicate = duplicateOn(db, dialect, "1".repeat(64));
      assertThat(dialect.keyTableSql("dup_keys").isDuplicateKey(duplicate)).as(duplicate.toString()).isTrue();
      // Another integrity violation of the same statement (a NULL into NOT NULL) is not a duplicate.
      SQLException notNull = duplicateOnNull(db);
      assertThat(dialect.keyTableSql("dup_keys").isDuplicateKey(notNull)).as(notNull.toString()).isFalse();
    } finally {
      db.drop();
    }
  }

  private static SQLException duplicateOnNull(TestDb db) throws Exception {
    try (Connection c = db.open(); PreparedStatement ps = c.prepareStatement(INSERT)) {
      ps.setString(1, "p");
      ps.setString(2, "op");
      ps.setString(3, UUID.randomUUID().toString());
      ps.setNull(4, Types.VARCHAR);
      ps.executeUpdate();
    } catch (SQLException e) {
      return e;
    }
    throw new AssertionError("a NULL fingerprint was accepted");
  }

  /**
   * The regression: one predicate for both engines, by vendor code. ER_DUP_ENTRY_WITH_KEY_NAME
   * (1586) was no duplicate for lease mode's copy; a translated message was none for transactional
   * mode's text match unless the code was 1062; a 23000 with "Duplicate" in its text but another
   * code was one for transactional mode only.
   */
  @Test
  void mysqlDuplicateKeyIsRecognisedTheSameWayByBothEngines() throws Exception {
    KeyTableSql mysql = Dialect.MYSQL.keyTableSql("idem_keys");
    assertThat(mysql.isDuplicateKey(new SQLException("Duplicate entry 'p-op-k' for key 'PRIMARY'", "23000", 1062))).isTrue();
    assertThat(mysql.isDuplicateKey(new SQLException("Duplicate entry 'p-op-k' for key 'PRIMARY'", "23000", 1586))).isTrue();
    assertThat(mysql.isDuplicateKey(new SQLException("Doppelter Eintrag 'p-op-k' für Schlüssel 'PRIMARY'", "23000", 1062))).isTrue();
    assertThat(mysql.isDuplicateKey(new SQLException("Column 'fingerprint' cannot be null", "23000", 1048))).isFalse();
    assertThat(mysql.isDuplicateKey(new SQLException("Duplicate column name 'x'", "23000", 0))).isFalse();

    // Both engines on one MariaDB table: each one's INSERT IGNORE meets the other's row as 0 rows,
    // never as an error, and reads it.
    TestDb db = TestDb.create(TestDb.Kind.MARIADB);
    try {
      CountingDataSource ds = new CountingDataSource(db::open);
      JdbcIdempotency tx = JdbcIdempotency.builder().table("both_modes").dataSource(ds).build();
      JdbcLeaseStore lease = JdbcLeaseStore.builder(ds).table("both_modes").build();
      IdempotentRequest done = request();
      Outcome first = tx.execute(done, c -> StoredResponse.of(201, "by transactional mode"));
      ClaimResult seen = lease.claim(done, "owner-1", Duration.ofSeconds(30), Duration.ofMinutes(5));
      assertThat(seen.state()).isEqualTo(ClaimResult.State.COMPLETED);
      assertThat(seen.response()).isEqualTo(first.response());

      IdempotentRequest held = request();
      assertThat(lease.claim(held, "owner-1", Duration.ofSeconds(30), Duration.ofMinutes(5)).state())
          .isEqualTo(ClaimResult.State.CLAIMED);
      assertThatThrownBy(() -> tx.execute(held, c -> StoredResponse.of(201, "never")))
          .isInstanceOf(RequestInProgressException.class);
      assertThat(lease.complete(held.scope(), held.key(), "owner-1", StoredResponse.of(201, "by lease mode"), Duration.ofMinutes(5)))
          .isTrue();
      assertThat(tx.execute(held, c -> StoredResponse.of(201, "never")).response()).isEqualTo(StoredResponse.of(201, "by lease mode"));
      ds.close();
    } finally {
      db.drop();
    }
  }

  private static IdempotentRequest request() {
    return IdempotentRequest.ofJson("p", "op", UUID.randomUUID().toString(), "{}".getBytes(StandardCharsets.UTF_8));
  }
}
