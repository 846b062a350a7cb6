package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.testkit.TestDatabase;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The keys the loader writes with SQL are the keys the load client sends: a replay of a preloaded
 * key that the database spelled differently would run as a create and measure the wrong thing. And
 * the copy writes every row once, with the template's record, its expiry in place, and the indexes
 * back under their shipped names.
 */
class KeyTableLoaderTest {

  @Test
  void aKeyIsTheMd5OfTheRowNumberWrittenAsAUuid() {
    assertEquals("c4ca4238-a0b9-2382-0dcc-509a6f75849b", KeyTableLoader.keyOf(1)); // md5("1")
    assertEquals(36, KeyTableLoader.keyOf(10_000_000).length());
  }

  static void sameKeys(String url, KeyTableLoader.Database db) throws Exception {
    try (Connection c = KeyTableLoader.connect(db, url); Statement st = c.createStatement()) {
      for (long n : new long[] {1, 42, 99_999_999}) {
        try (ResultSet rs = st.executeQuery("SELECT " + KeyTableLoader.keySql(db, "g") + " FROM (SELECT " + n + " AS g) AS s")) {
          rs.next();
          assertEquals(KeyTableLoader.keyOf(n), rs.getString(1), "row " + n);
        }
      }
    }
  }

  /** Copies a template record written here (as the service would) 10 times, as rows 5 to 14. */
  static void copies(String url, KeyTableLoader.Database db, String indexesSql) throws Exception {
    byte[] answer = {1, 2, 3, (byte) 0xff};
    try (Connection c = DriverManager.getConnection(url)) {
      JdbcIdempotency.builder().createSchema(false).build().createSchema(c);
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO idem_keys (principal, operation, idem_key, fingerprint, state,"
          + " owner_token, lease_until, status, response, created_at, expires_at) VALUES ('alice', 'POST /notes', 'template', ?,"
          + " 'COMPLETED', NULL, NULL, 201, ?, 1, 2)")) {
        ps.setString(1, "f".repeat(64));
        ps.setBytes(2, answer);
        ps.executeUpdate();
      }
    }
    long expiresFirst = 1_000_000_000_000L;
    long expiresLast = expiresFirst + 9_000;
    KeyTableLoader.copy(db, url, "template", 5, 10, expiresFirst, expiresLast, false);
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM idem_keys")) {
        rs.next();
        assertEquals(11, rs.getLong(1), "the template and 10 copies");
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT principal, operation, fingerprint, state, status, response,"
          + " created_at, expires_at FROM idem_keys WHERE idem_key = ?")) {
        for (long n = 5; n <= 14; n++) {
          ps.setString(1, KeyTableLoader.keyOf(n));
          try (ResultSet rs = ps.executeQuery()) {
            assertTrue(rs.next(), "row " + n + " under " + KeyTableLoader.keyOf(n));
            assertEquals("alice", rs.getString(1));
            assertEquals("POST /notes", rs.getString(2));
            assertEquals("f".repeat(64), rs.getString(3));
            assertEquals("COMPLETED", rs.getString(4));
            assertEquals(201, rs.getInt(5));
            assertArrayEquals(answer, rs.getBytes(6));
            long expires = expiresLast - (n - 5) * 1_000; // evenly from the last (row 5) down to the first (row 14)
            assertEquals(expires - KeyTableLoader.RETENTION_MILLIS, rs.getLong(7), "created_at of row " + n);
            assertEquals(expires, rs.getLong(8), "expires_at of row " + n);
          }
        }
      }
      try (ResultSet rs = st.executeQuery(indexesSql)) {
        rs.next();
        assertEquals(1, rs.getLong(1), "the expiry index is back under its shipped name: " + indexesSql);
      }
    }
  }

  @Nested
  class OnPostgres {
    @RegisterExtension
    static final TestDatabase DB = TestDatabase.postgres();

    @Test
    void postgresWritesTheKeysTheClientSends() throws Exception {
      sameKeys(DB.url(), KeyTableLoader.Database.POSTGRES);
    }

    @Test
    void postgresCopiesTheTemplate() throws Exception {
      copies(DB.url(), KeyTableLoader.Database.POSTGRES, "SELECT count(*) FROM pg_indexes WHERE tablename = 'idem_keys' AND indexname"
          + " IN ('idem_keys_expires_at', 'idem_keys_pkey') AND indexdef LIKE '%expires_at%'");
    }
  }

  @Nested
  class OnMariadb {
    @RegisterExtension
    static final TestDatabase DB = TestDatabase.mariadb();

    @Test
    void mariadbWritesTheKeysTheClientSends() throws Exception {
      sameKeys(DB.url(), KeyTableLoader.Database.MARIADB);
    }

    @Test
    void mariadbCopiesTheTemplate() throws Exception {
      copies(DB.url(), KeyTableLoader.Database.MARIADB, "SELECT count(DISTINCT index_name) FROM information_schema.statistics"
          + " WHERE table_schema = DATABASE() AND table_name = 'idem_keys' AND index_name = 'idem_keys_expires_at'");
    }
  }

  @Nested
  class OnSqlite {
    @Test
    void sqliteWritesTheKeysTheClientSends() throws Exception {
      // SQLite has no md5(): the one KeyTableLoader.connect registers, written in Java, on SQLite's text of an integer
      sameKeys("jdbc:sqlite::memory:", KeyTableLoader.Database.SQLITE);
    }

    @Test
    void sqliteCopiesTheTemplate(@TempDir Path dir) throws Exception {
      copies("jdbc:sqlite:" + dir.resolve("keys.db") + "?journal_mode=WAL&synchronous=NORMAL", KeyTableLoader.Database.SQLITE,
          "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'idem_keys_expires_at' AND tbl_name = 'idem_keys'");
    }
  }
}
