package dev.idem.testkit;

import dev.idem.lab.jdbc.JdbcTarget;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.Locale;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension that gives a test class a database of its own and removes it afterwards.
 *
 * <p>Register it as a static field: {@code @RegisterExtension static final TestDatabase db =
 * TestDatabase.postgres();} and use {@link #target()} in the tests. The class's {@code @Nested}
 * classes (JUnit calls an extension registered in a static field for them too) share its database:
 * it is made before the class's first test and removed after its last nested class.
 *
 * <ul>
 *   <li>{@link #sqlite()}: a new SQLite file in a temporary folder, deleted afterwards.
 *   <li>{@link #postgres()}: a database named {@code idem_test_<random>} on the server at {@code
 *       IDEM_TEST_POSTGRES_URL} (default {@value #DEFAULT_POSTGRES_URL}), dropped afterwards with
 *       {@code WITH (FORCE)}.
 *   <li>{@link #mariadb()}: a database named {@code idem_test_<random>} on the server at {@code
 *       IDEM_TEST_MARIADB_URL} (default {@value #DEFAULT_MARIADB_URL}), dropped afterwards.
 *   <li>{@link #h2()}: an in-memory H2 database named {@code idem_test_<random>} (native mode,
 *       kept open until the class ends, lock timeout 10 s), shut down afterwards. Needs H2 2.x on
 *       the test class path; never skipped.
 * </ul>
 *
 * <p>When the server cannot be reached the test class is skipped with a message on standard error
 * that names the server, except under {@code CI=true}, where it fails: CI never passes by skipping
 * a backend. Not thread-safe during set-up; {@link #target()} is safe to share afterwards.
 */
public final class TestDatabase implements BeforeAllCallback, AfterAllCallback {

  /** The PostgreSQL server used when {@code IDEM_TEST_POSTGRES_URL} is not set. */
  public static final String DEFAULT_POSTGRES_URL = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";

  /** The MariaDB or MySQL server used when {@code IDEM_TEST_MARIADB_URL} is not set. */
  public static final String DEFAULT_MARIADB_URL = "jdbc:mariadb://127.0.0.1:3306/?user=root";

  private enum Kind { SQLITE, POSTGRES, MARIADB, H2 }

  private final Kind kind;
  private Path folder;
  private String adminUrl;
  private String database;
  private JdbcTarget target;
  /** The unique id of the class whose {@link #beforeAll} set the database up, or {@code null}. */
  private String owner;

  private TestDatabase(Kind kind) {
    this.kind = kind;
  }

  /** @return an extension that makes a fresh SQLite file per test class */
  public static TestDatabase sqlite() {
    return new TestDatabase(Kind.SQLITE);
  }

  /** @return an extension that makes a fresh PostgreSQL database per test class */
  public static TestDatabase postgres() {
    return new TestDatabase(Kind.POSTGRES);
  }

  /** @return an extension that makes a fresh MariaDB (or MySQL) database per test class */
  public static TestDatabase mariadb() {
    return new TestDatabase(Kind.MARIADB);
  }

  /** @return an extension that makes a fresh in-memory H2 database per test class */
  public static TestDatabase h2() {
    return new TestDatabase(Kind.H2);
  }

  /**
   * @return where to open connections to this class's database
   * @throws IllegalStateException before the extension ran
   */
  public JdbcTarget target() {
    if (target == null) {
      throw new IllegalStateException("TestDatabase is not set up: register it with @RegisterExtension on a static field");
    }
    return target;
  }

  /**
   * @return the JDBC URL of this class's database, for a framework that opens its own connections
   *     (a Spring Boot test's {@code spring.datasource.url})
   * @throws IllegalStateException before the extension ran
   */
  public String url() {
    return target().url();
  }

  /**
   * The database's R2DBC URL, read from its JDBC URL: {@code jdbc:postgresql://host:port/name?user=u}
   * becomes {@code r2dbc:postgresql://u@host:port/name} (R2DBC takes the user and password in the
   * authority), other query parameters kept.
   *
   * @return the R2DBC URL, for {@code io.r2dbc.spi.ConnectionFactories#get} or {@code spring.r2dbc.url}
   * @throws IllegalStateException before the extension ran, or for SQLite and H2 (no R2DBC driver here)
   */
  public String r2dbcUrl() {
    String url = url();
    if (!url.startsWith("jdbc:postgresql:") && !url.startsWith("jdbc:mariadb:")) {
      throw new IllegalStateException("no R2DBC URL for " + url);
    }
    String rest = url.substring("jdbc:".length());
    int query = rest.indexOf('?');
    String base = query < 0 ? rest : rest.substring(0, query);
    String user = "";
    String password = "";
    StringBuilder options = new StringBuilder();
    if (query >= 0) {
      for (String pair : rest.substring(query + 1).split("&")) {
        if (pair.startsWith("user=")) {
          user = pair.substring("user=".length());
        } else if (pair.startsWith("password=")) {
          password = pair.substring("password=".length());
        } else if (!pair.isEmpty()) {
          options.append(options.length() == 0 ? "?" : "&").append(pair);
        }
      }
    }
    String credentials = user.isEmpty() ? "" : user + (password.isEmpty() ? "" : ":" + password) + "@";
    int hostStart = base.indexOf("//") + 2;
    return "r2dbc:" + base.substring(0, hostStart) + credentials + base.substring(hostStart) + options;
  }

  /** @return {@code true} when the environment says this is a CI run ({@code CI=true}) */
  public static boolean underCi() {
    return "true".equalsIgnoreCase(System.getenv("CI"));
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (owner != null) {
      return; // a @Nested class of the class that registered this extension: its database is shared
    }
    owner = context.getUniqueId();
    switch (kind) {
      case SQLITE:
        folder = Files.createTempDirectory("idem-test-");
        target = JdbcTarget.of("jdbc:sqlite:" + folder.resolve("test.db"));
        break;
      case POSTGRES:
        adminUrl = env("IDEM_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL);
        String postgresName = randomName();
        try (Connection admin = connectOrSkip("PostgreSQL", adminUrl);
            Statement st = admin.createStatement()) {
          st.execute("CREATE DATABASE " + postgresName);
        }
        database = postgresName; // only once it exists: a skipped class has nothing to drop
        target = JdbcTarget.of(withDatabase(adminUrl, database));
        break;
      case MARIADB:
        adminUrl = env("IDEM_TEST_MARIADB_URL", DEFAULT_MARIADB_URL);
        String mariadbName = randomName();
        try (Connection admin = connectOrSkip("MariaDB", adminUrl);
            Statement st = admin.createStatement()) {
          st.execute("CREATE DATABASE " + mariadbName + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
        }
        database = mariadbName; // only once it exists: a skipped class has nothing to drop
        target = JdbcTarget.of(withDatabase(adminUrl, database));
        break;
      case H2:
        // DB_CLOSE_DELAY=-1: the database lives while the JVM does, until afterAll shuts it down
        adminUrl = "jdbc:h2:mem:" + randomName() + ";DB_CLOSE_DELAY=-1";
        target = JdbcTarget.of(adminUrl);
        break;
      default:
        throw new IllegalStateException(kind.toString());
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (!context.getUniqueId().equals(owner)) {
      return; // a @Nested class ends: the class that set the database up removes it
    }
    owner = null;
    if (kind == Kind.SQLITE && folder != null) {
      try (Stream<Path> files = Files.walk(folder)) {
        files.sorted(Comparator.reverseOrder()).forEach(TestDatabase::delete);
      }
    }
    if (kind == Kind.H2 && adminUrl != null) {
      try (Connection c = DriverManager.getConnection(adminUrl); Statement st = c.createStatement()) {
        st.execute("SHUTDOWN");
      }
    }
    if (database != null) {
      try (Connection admin = DriverManager.getConnection(adminUrl);
          Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + database + (kind == Kind.POSTGRES ? " WITH (FORCE)" : ""));
      }
    }
  }

  private static Connection connectOrSkip(String what, String url) throws SQLException {
    try {
      DriverManager.setLoginTimeout(5);
      return DriverManager.getConnection(url);
    } catch (SQLException e) {
      String message = what + " is not reachable at " + url + " (" + e.getMessage() + ")";
      if (underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      System.err.println("[idem-testkit] SKIPPED: " + message + "; start it to run this suite");
      Assumptions.abort(message);
      throw e; // unreachable
    }
  }

  private static String randomName() {
    return "idem_test_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
  }

  private static String withDatabase(String url, String database) {
    int query = url.indexOf('?');
    String base = query < 0 ? url : url.substring(0, query);
    String params = query < 0 ? "" : url.substring(query);
    int slash = base.lastIndexOf('/');
    return base.substring(0, slash + 1) + database + params;
  }

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? fallback : value;
  }

  private static void delete(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
