package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The key table's lookups (does it exist, do its columns compare byte for byte) read the table the
 * connection's unqualified statements use: never a table of the same name in another database
 * (MariaDB) or schema (PostgreSQL) of the same server. Each test makes its own database and a
 * uniquely named decoy database or schema, and drops both.
 */
class SchemaLookupTest {

  private static String decoyName() {
    return "decoy_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
  }

  private static IdempotentRequest request() {
    return IdempotentRequest.ofJson("p", "op", UUID.randomUUID().toString(), "{}".getBytes(StandardCharsets.UTF_8));
  }

  /** A key table whose principal compares loosely (CHAR on PostgreSQL, a PAD SPACE VARCHAR on MariaDB). */
  private static String looseTable(TestDb.Kind kind, String name) {
    return kind == TestDb.Kind.POSTGRESQL
        ? "CREATE TABLE " + name + " (principal CHAR(200), operation VARCHAR(200), idem_key VARCHAR(255), owner_token VARCHAR(64))"
        : "CREATE TABLE " + name + " (principal VARCHAR(200) COLLATE utf8mb4_bin, operation VARBINARY(600),"
            + " idem_key VARBINARY(255), owner_token VARBINARY(256))";
  }

  /** A key table whose four identity columns compare byte for byte. */
  private static String strictTable(TestDb.Kind kind, String name) {
    return kind == TestDb.Kind.POSTGRESQL
        ? "CREATE TABLE " + name + " (principal VARCHAR(200) COLLATE \"C\", operation VARCHAR(200) COLLATE \"C\","
            + " idem_key VARCHAR(255) COLLATE \"C\", owner_token VARCHAR(64) COLLATE \"C\")"
        : "CREATE TABLE " + name + " (principal VARBINARY(600), operation VARBINARY(600), idem_key VARBINARY(255),"
            + " owner_token VARBINARY(256))";
  }

  private static String createOther(TestDb.Kind kind, String name) {
    return (kind == TestDb.Kind.POSTGRESQL ? "CREATE SCHEMA " : "CREATE DATABASE ") + name;
  }

  private static String dropOther(TestDb.Kind kind, String name) {
    return kind == TestDb.Kind.POSTGRESQL ? "DROP SCHEMA IF EXISTS " + name + " CASCADE" : "DROP DATABASE IF EXISTS " + name;
  }

  @ParameterizedTest
  @EnumSource(value = TestDb.Kind.class, names = {"POSTGRESQL", "MARIADB"})
  void schemaCheckIgnoresSameNamedTableInAnotherDatabase(TestDb.Kind kind) throws Exception {
    TestDb db = TestDb.create(kind);
    String decoy = decoyName();
    try (Connection c = db.open(); Statement st = c.createStatement()) {
      st.execute(createOther(kind, decoy));
      try {
        // ours compares byte for byte, the decoy loosely: the check passes
        st.execute(strictTable(kind, "strict_keys"));
        st.execute(looseTable(kind, decoy + ".strict_keys"));
        JdbcIdempotency.builder().table("strict_keys").createSchema(false).build().checkSchema(c);

        // ours compares loosely, the decoy byte for byte: the check refuses ours
        st.execute(looseTable(kind, "loose_keys"));
        st.execute(strictTable(kind, decoy + ".loose_keys"));
        assertThatThrownBy(() -> JdbcIdempotency.builder().table("loose_keys").createSchema(false).build().checkSchema(c))
            .isInstanceOf(IdemStoreException.class)
            .hasMessageContaining("principal");
      } finally {
        st.execute(dropOther(kind, decoy));
      }
    } finally {
      db.drop();
    }
  }

  /**
   * The regression: on PostgreSQL tableExists looked in the first schema of the search_path only
   * ({@code getSchema()}), so with {@code search_path = decoy, public} and the key table in public
   * it said absent, and Idem created a second, empty key table in the decoy schema: every key
   * already answered in public.idem_keys ran again.
   */
  @Test
  void tableLookupFollowsTheSearchPathPastASchemaWithoutTheTable() throws Exception {
    TestDb db = TestDb.create(TestDb.Kind.POSTGRESQL);
    String decoy = decoyName();
    IdempotentRequest request = request();
    try {
      try (Connection c = db.open(); Statement st = c.createStatement()) {
        JdbcIdempotency.builder().table("path_keys").build().execute(c, request, conn -> StoredResponse.of(201, "first"));
        st.execute("CREATE SCHEMA " + decoy); // exists, without the key table
      }
      try (Connection c = db.open(); Statement st = c.createStatement()) {
        st.execute("SET search_path = " + decoy + ", public");
        JdbcIdempotency idem = JdbcIdempotency.builder().table("path_keys").build();
        assertThat(idem.tableExists(c)).isTrue();
        assertThat(idem.execute(c, request, conn -> StoredResponse.of(201, "second")).replayed()).isTrue();
        try (ResultSet rs = st.executeQuery("SELECT to_regclass('" + decoy + ".path_keys') IS NULL")) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getBoolean(1)).as("no second key table in the decoy schema").isTrue();
        }
        st.execute("DROP SCHEMA " + decoy + " CASCADE");
      }
    } finally {
      db.drop();
    }
  }
}
