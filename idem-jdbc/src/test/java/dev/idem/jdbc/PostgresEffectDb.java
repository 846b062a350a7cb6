package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension for the PostgreSQL tests of the merged statements: a database of its own for
 * every test ({@link TestDb}, dropped afterwards) with the tables of {@code setUpSql}, and the
 * helpers those tests share. Register it with {@code @RegisterExtension}. Not thread-safe for set-up;
 * {@link #open()} and {@link #dataSource()} may be called from many threads.
 */
final class PostgresEffectDb implements BeforeEachCallback, AfterEachCallback {

  private final String setUpSql;
  private volatile TestDb db;

  /** @param setUpSql statements run once the database exists (the effect's tables), separated by {@code ;} */
  PostgresEffectDb(String setUpSql) {
    this.setUpSql = setUpSql;
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    db = TestDb.create(TestDb.Kind.POSTGRESQL);
    exec(setUpSql);
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    if (db != null) {
      db.drop();
    }
  }

  /** @return a new connection to this test's database, in auto-commit mode */
  Connection open() throws SQLException {
    return db.open();
  }

  /** @return a new connection to this test's database with pgjdbc URL parameters ({@code a=b&c=d}) */
  Connection open(String params) throws SQLException {
    return db.open(params);
  }

  /** @return a DataSource that opens a new connection to this test's database on every call */
  DataSource dataSource() {
    return new DataSource() {
      @Override public Connection getConnection() throws SQLException { return open(); }
      @Override public Connection getConnection(String u, String p) throws SQLException { return open(); }
      @Override public PrintWriter getLogWriter() { return null; }
      @Override public void setLogWriter(PrintWriter out) {}
      @Override public void setLoginTimeout(int seconds) {}
      @Override public int getLoginTimeout() { return 0; }
      @Override public Logger getParentLogger() { return Logger.getGlobal(); }
      @Override public <T> T unwrap(Class<T> iface) throws SQLException { throw new SQLException("not a wrapper"); }
      @Override public boolean isWrapperFor(Class<?> iface) { return false; }
    };
  }

  /** @return the single number {@code sql} selects, read on a connection of its own */
  long count(String sql) throws SQLException {
    try (Connection c = open(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Runs {@code sql} on a connection of its own, in auto-commit mode. */
  void exec(String sql) throws SQLException {
    try (Connection c = open(); Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  /** @return a request of scope ("p", "op") with {@code key} and the body {@code {"a":1}} */
  static IdempotentRequest request(String key) {
    return IdempotentRequest.ofJson("p", "op", key, "{\"a\":1}".getBytes(StandardCharsets.UTF_8));
  }

  /** Inserts the row {@code id} into the effect table {@code fx (id)} on {@code c}: an effect's write. */
  static void insertEffectRow(Connection c, String id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO fx (id) VALUES (?)")) {
      ps.setString(1, id);
      ps.executeUpdate();
    }
  }

  /** @return {@code txid_current()} on {@code c} */
  static long txid(Connection c) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT txid_current()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Asserts that {@code c} is back in auto-commit mode with no transaction open. */
  static void assertIdle(Connection c) throws SQLException {
    assertThat(c.getAutoCommit()).isTrue();
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM pg_stat_activity WHERE pid = pg_backend_pid()"
            + " AND backend_xid IS NULL")) {
      rs.next();
      assertThat(rs.getLong(1)).isOne();
    }
    // No transaction left open: two statements run in two transactions.
    assertThat(txid(c)).isNotEqualTo(txid(c));
  }
}
