package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.core.IdemStoreException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The H2 dialect on an embedded in-memory database: what the contracts in idem-testkit do not
 * single out (detection, the duplicate-key code among other constraint errors, the clock, the
 * column check of a table made by hand). The engines run on H2 in H2TransactionalContractTest and
 * its siblings.
 */
class H2DialectTest {

  private String url;
  private Connection keepOpen;

  @BeforeEach
  void open() throws SQLException {
    url = "jdbc:h2:mem:h2_dialect_" + UUID.randomUUID().toString().replace("-", "") + ";DB_CLOSE_DELAY=-1";
    keepOpen = DriverManager.getConnection(url);
  }

  @AfterEach
  void close() throws SQLException {
    try (Statement st = keepOpen.createStatement()) {
      st.execute("SHUTDOWN");
    }
    keepOpen.close();
  }

  @Test
  void anH2ConnectionIsDetectedByItsDriverAndByItsProductNameAndEachDialectByItsName() {
    assertThat(Dialect.of(keepOpen)).isSameAs(Dialect.H2).isSameAs(Dialect.h2());
    assertThat(Dialect.detect(keepOpen)).isSameAs(Dialect.H2);
    assertThat(Dialect.H2.name()).isEqualTo("H2");
    assertThat(Dialect.all()).containsExactly(Dialect.SQLITE, Dialect.POSTGRESQL, Dialect.MYSQL, Dialect.H2);
    for (Dialect d : Dialect.all()) {
      assertThat(Dialect.valueOf(d.name())).isSameAs(d);
    }
    assertThatThrownBy(() -> Dialect.valueOf("ORACLE")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void onlyADuplicateKeyIsADuplicateKey() throws SQLException {
    try (Statement st = keepOpen.createStatement()) {
      st.execute("CREATE TABLE dup (id VARCHAR(10) PRIMARY KEY, v INT NOT NULL)");
      st.execute("INSERT INTO dup VALUES ('a', 1)");
      SQLException duplicate = catchThrowableOfType(SQLException.class, () -> st.execute("INSERT INTO dup VALUES ('a', 2)"));
      SQLException notNull = catchThrowableOfType(SQLException.class, () -> st.execute("INSERT INTO dup VALUES ('b', NULL)"));
      assertThat(Dialect.H2.isDuplicateKey(duplicate)).as(duplicate.toString()).isTrue();
      assertThat(Dialect.H2.isDuplicateKey(notNull)).as(notNull.toString()).isFalse();
      assertThat(Dialect.H2.isLockWaitExceeded(duplicate)).isFalse();
    }
  }

  @Test
  void theClockIsTheEpochInMillisecondsWhateverTheSessionTimeZone() throws SQLException {
    try (Statement st = keepOpen.createStatement()) {
      st.execute("SET TIME ZONE 'America/New_York'");
      long before = System.currentTimeMillis();
      try (ResultSet rs = st.executeQuery("SELECT " + Dialect.H2.nowMillis())) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getLong(1)).isBetween(before - 1_000, System.currentTimeMillis() + 1_000);
      }
    }
  }

  @Test
  void aKeyTableWithAPaddedKeyColumnIsRefusedAndTheShippedOneAccepted() throws SQLException {
    try (Statement st = keepOpen.createStatement()) {
      st.execute("CREATE TABLE padded_keys (principal VARCHAR(200) NOT NULL, operation VARCHAR(200) NOT NULL,"
          + " idem_key CHAR(255) NOT NULL, fingerprint CHAR(64) NOT NULL, state VARCHAR(16) NOT NULL,"
          + " owner_token VARCHAR(64), lease_until BIGINT, status INTEGER, response VARBINARY,"
          + " created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (principal, operation, idem_key))");
    }
    IdemStoreException refused = catchThrowableOfType(IdemStoreException.class,
        () -> JdbcIdempotency.builder().table("padded_keys").build().checkSchema(keepOpen));
    assertThat(refused).isNotNull();
    assertThat(refused.getMessage()).contains("idem_key is CHARACTER").contains("ALTER TABLE padded_keys");

    JdbcIdempotency shipped = JdbcIdempotency.builder().table("shipped_keys").build();
    shipped.createSchema(keepOpen);
    assertThat(shipped.tableExists(keepOpen)).isTrue();
    shipped.checkSchema(keepOpen);
  }
}
