package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idem.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The keys the loader writes with SQL are the keys the load client sends: a replay of a preloaded
 * key that the database spelled differently would run as a create and measure the wrong thing.
 */
class KeyTableLoaderTest {

  @Test
  void aKeyIsTheMd5OfTheRowNumberWrittenAsAUuid() {
    assertEquals("c4ca4238-a0b9-2382-0dcc-509a6f75849b", KeyTableLoader.keyOf(1)); // md5("1")
    assertEquals(36, KeyTableLoader.keyOf(10_000_000).length());
  }

  static void sameKeys(String url, KeyTableLoader.Database db) throws Exception {
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
      for (long n : new long[] {1, 42, 99_999_999}) {
        try (ResultSet rs = st.executeQuery("SELECT " + KeyTableLoader.keySql(db, "g") + " FROM (SELECT " + n + " AS g) AS s")) {
          rs.next();
          assertEquals(KeyTableLoader.keyOf(n), rs.getString(1), "row " + n);
        }
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
  }

  @Nested
  class OnMariadb {
    @RegisterExtension
    static final TestDatabase DB = TestDatabase.mariadb();

    @Test
    void mariadbWritesTheKeysTheClientSends() throws Exception {
      sameKeys(DB.url(), KeyTableLoader.Database.MARIADB);
    }
  }
}
