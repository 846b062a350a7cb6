package dev.idem.jdbc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;

/**
 * A database of its own for one test class, on each dialect: a SQLite file in a temporary folder,
 * or a database {@code idem_jdbc_<random>} on the PostgreSQL ({@code IDEM_TEST_POSTGRES_URL},
 * default {@code 127.0.0.1:5432}, user postgres) or MariaDB server ({@code IDEM_TEST_MARIADB_URL},
 * default {@code 127.0.0.1:3306}, user root), dropped by {@link #drop()}. An unreachable server
 * skips the test, except under {@code CI=true}, where it fails. (idem-testkit's TestDatabase does
 * the same for the contract suites; idem-testkit depends on this module, so it cannot be used here.)
 */
final class TestDb {

  enum Kind { SQLITE, POSTGRESQL, MARIADB }

  final Kind kind;
  private final String adminUrl;
  private final String url;
  private final String name;

  private TestDb(Kind kind, String adminUrl, String url, String name) {
    this.kind = kind;
    this.adminUrl = adminUrl;
    this.url = url;
    this.name = name;
  }

  static TestDb create(Kind kind) throws Exception {
    String name = "idem_jdbc_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
    switch (kind) {
      case SQLITE: {
        Path dir = Files.createTempDirectory("idem-jdbc-");
        return new TestDb(kind, null, "jdbc:sqlite:" + dir.resolve("test.db"), null);
      }
      case POSTGRESQL: {
        String admin = env("IDEM_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres");
        execute(admin, "CREATE DATABASE " + name);
        return new TestDb(kind, admin, withDatabase(admin, name), name);
      }
      default: {
        String admin = env("IDEM_TEST_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/?user=root");
        execute(admin, "CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
        return new TestDb(kind, admin, withDatabase(admin, name), name);
      }
    }
  }

  /** @return a new connection in auto-commit mode, with a 10 s lock wait */
  Connection open() throws SQLException {
    Connection c = DriverManager.getConnection(url);
    try (Statement st = c.createStatement()) {
      Dialect dialect = Dialect.of(c);
      for (String setting : dialect.sessionLockWait(java.time.Duration.ofSeconds(10))) {
        st.execute(setting);
      }
      if (dialect.serializesWriters()) {
        st.execute("PRAGMA journal_mode = WAL"); // readers do not block the single writer
      }
    }
    return c;
  }

  /** @return a new connection with {@code params} (driver properties, {@code a=b&c=d}) added to the URL */
  Connection open(String params) throws SQLException {
    return DriverManager.getConnection(url + (url.contains("?") ? "&" : "?") + params);
  }

  void drop() throws SQLException {
    if (name != null) {
      try (Connection c = DriverManager.getConnection(adminUrl); Statement st = c.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + name + (kind == Kind.POSTGRESQL ? " WITH (FORCE)" : ""));
      }
    }
  }

  private static void execute(String url, String sql) throws SQLException {
    Connection c;
    try {
      DriverManager.setLoginTimeout(5);
      c = DriverManager.getConnection(url);
    } catch (SQLException e) {
      String message = "not reachable: " + url + " (" + e.getMessage() + ")";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      Assumptions.abort(message);
      throw e;
    }
    try (c; Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  private static String withDatabase(String url, String database) {
    int query = url.indexOf('?');
    String base = query < 0 ? url : url.substring(0, query);
    String params = query < 0 ? "" : url.substring(query);
    return base.substring(0, base.lastIndexOf('/') + 1) + database + params;
  }

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? fallback : value;
  }
}
