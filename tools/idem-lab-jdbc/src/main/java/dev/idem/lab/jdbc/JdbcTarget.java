package dev.idem.lab.jdbc;

import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Where tests and the lab open connections: a JDBC URL plus the lock wait every connection gets, so
 * that concurrent duplicates wait for the winner instead of failing at once.
 *
 * <p>Each new connection gets its dialect's session lock wait ({@link Dialect#sessionLockWait}):
 * SQLite's {@code busy_timeout}, PostgreSQL's {@code lock_timeout}, MySQL's and MariaDB's {@code
 * innodb_lock_wait_timeout} (whole seconds), H2's {@code LOCK_TIMEOUT}; a database with a single
 * writer (SQLite) also gets {@code journal_mode=WAL}. Immutable and thread-safe.
 */
public final class JdbcTarget {

  /** The lock wait used by the lab and the contract: 10 seconds. */
  public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(10);

  private final String url;
  private final Duration lockTimeout;

  /**
   * @param url a JDBC URL whose driver is on the class path
   * @param lockTimeout how long a connection waits for a lock held by another transaction
   */
  public JdbcTarget(String url, Duration lockTimeout) {
    this.url = Objects.requireNonNull(url, "url");
    this.lockTimeout = Objects.requireNonNull(lockTimeout, "lockTimeout");
  }

  /** A target with the {@linkplain #DEFAULT_LOCK_TIMEOUT default lock wait}. */
  public static JdbcTarget of(String url) {
    return new JdbcTarget(url, DEFAULT_LOCK_TIMEOUT);
  }

  /** @return the JDBC URL */
  public String url() {
    return url;
  }

  /**
   * Opens a new connection in auto-commit mode, prepared for its dialect.
   *
   * @throws SQLException if the database cannot be reached or refuses the settings
   */
  public Connection open() throws SQLException {
    Connection c = DriverManager.getConnection(url);
    try (Statement st = c.createStatement()) {
      Dialect dialect = Dialect.detect(c);
      for (String setting : dialect.sessionLockWait(lockTimeout)) {
        st.execute(setting);
      }
      if (dialect.serializesWriters()) {
        st.execute("PRAGMA journal_mode = WAL"); // SQLite: readers do not block the single writer
      }
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
    return c;
  }

  /**
   * @return the product name and version, for example {@code "PostgreSQL 15.19"}
   * @throws SQLException if the database cannot be reached
   */
  public String describe() throws SQLException {
    try (Connection c = open()) {
      DatabaseMetaData md = c.getMetaData();
      return md.getDatabaseProductName() + " " + md.getDatabaseProductVersion();
    }
  }

  /**
   * @return a {@link DataSource} whose every {@code getConnection()} is a new connection from
   *     {@link #open()} (no pooling: meant for tests and the lab); thread-safe
   */
  public DataSource dataSource() {
    return SimpleDataSource.of(this::open);
  }

  @Override
  public String toString() {
    return url;
  }
}
