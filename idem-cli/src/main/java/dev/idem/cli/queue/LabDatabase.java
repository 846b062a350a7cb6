package dev.idem.cli.queue;

import dev.idem.jdbc.Dialect;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.Objects;
import java.util.UUID;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The queue lab's database: a JDBC URL, a {@link DataSource} that opens a new connection per call
 * (prepared to wait for locks: SQLite {@code busy_timeout} and WAL, PostgreSQL {@code
 * lock_timeout}, MySQL/MariaDB {@code innodb_lock_wait_timeout}), and the effects table the lab
 * counts. Used by the lab and by its child processes. Thread-safe.
 */
final class LabDatabase implements DataSource {

  /** The effects every consumer and request of the lab writes, one row per effect. */
  static final String EFFECTS_TABLE = "idem_qlab_effects";

  private static final int LOCK_WAIT_MILLIS = 10_000;

  private final String url;

  LabDatabase(String url) {
    this.url = Objects.requireNonNull(url, "url");
  }

  String url() {
    return url;
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection c = DriverManager.getConnection(url);
    try (Statement st = c.createStatement()) {
      switch (Dialect.detect(c)) {
        case SQLITE:
          st.execute("PRAGMA busy_timeout = " + LOCK_WAIT_MILLIS);
          st.execute("PRAGMA journal_mode = WAL");
          break;
        case POSTGRESQL:
          st.execute("SET lock_timeout = " + LOCK_WAIT_MILLIS);
          break;
        case MYSQL:
          st.execute("SET SESSION innodb_lock_wait_timeout = " + LOCK_WAIT_MILLIS / 1000);
          break;
        default:
          break;
      }
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
    return c;
  }

  /** @return the product and version, for example {@code "SQLite 3.54.1"} */
  String describe() throws SQLException {
    try (Connection c = getConnection()) {
      DatabaseMetaData md = c.getMetaData();
      return md.getDatabaseProductName() + " " + md.getDatabaseProductVersion();
    }
  }

  /** Drops the lab's tables (effects, keys, outbox) and creates the effects table again. */
  void recreate(String... otherTables) throws SQLException {
    try (Connection c = getConnection(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + EFFECTS_TABLE);
      for (String t : otherTables) {
        st.execute("DROP TABLE IF EXISTS " + t);
      }
      st.execute("CREATE TABLE " + EFFECTS_TABLE + " (id VARCHAR(36) PRIMARY KEY, scenario VARCHAR(40) NOT NULL,"
          + " variant VARCHAR(20) NOT NULL, source VARCHAR(200))");
    }
  }

  /** Writes one effect through {@code c}, in whatever transaction {@code c} is in. */
  static void insertEffect(Connection c, String scenario, String variant, String source) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + EFFECTS_TABLE + " (id, scenario, variant, source) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, UUID.randomUUID().toString());
      ps.setString(2, scenario);
      ps.setString(3, variant);
      ps.setString(4, source == null ? null : source.length() > 200 ? source.substring(0, 200) : source);
      ps.executeUpdate();
    }
  }

  /** Writes one effect in a transaction of its own (auto-commit). */
  void insertEffect(String scenario, String variant, String source) throws SQLException {
    try (Connection c = getConnection()) {
      insertEffect(c, scenario, variant, source);
    }
  }

  /** @return the effects committed for the scenario and variant, counted with SQL */
  long countEffects(String scenario, String variant) throws SQLException {
    try (Connection c = getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT COUNT(*) FROM " + EFFECTS_TABLE + " WHERE scenario = ? AND variant = ?")) {
      ps.setString(1, scenario);
      ps.setString(2, variant);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** @return the URL with any {@code password=} value masked, for output */
  static String redact(String url) {
    return url.replaceAll("(?i)(password=)[^&;]*", "$1***").replaceAll("(://[^:/@]*:)[^@/]*@", "$1***@");
  }

  // ---- the rest of DataSource: not used ----

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("put the user and password in the JDBC URL");
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
