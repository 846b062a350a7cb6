package dev.idem.lab.jdbc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Objects;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A {@link DataSource} reduced to {@link #getConnection()}: the one the lab, {@code idem lab}'s
 * queue lab, the benchmarks and tests hand to stores that borrow connections. No pooling, no
 * credentials (they come with the JDBC URL), no log writer, not a wrapper. Thread-safety is the
 * subclass's, or the opener's for {@link #of(Opener)}.
 *
 * <p>Why not a pool such as HikariCP: these tools need to choose what a connection is. The lab's
 * concurrent scenario wants each attempt on a connection of its own (a pool smaller than the
 * attempts would queue them and hide the race); the benchmarks give each client exactly one
 * connection for the whole run, so that pool waits are not counted as store latency; and each new
 * connection is prepared for its dialect ({@link JdbcTarget#open()}), which a pool's single
 * init-SQL string cannot do across SQLite, PostgreSQL and MariaDB. Applications use their pool;
 * the stores only call {@code getConnection()} and {@code close()}.
 */
public abstract class SimpleDataSource implements DataSource {

  /** Opens one connection; the {@link DataSource} that calls it closes nothing itself. */
  @FunctionalInterface
  public interface Opener {
    /**
     * @return a connection the caller owns and closes, never {@code null}
     * @throws SQLException if the connection cannot be opened
     */
    Connection open() throws SQLException;
  }

  /**
   * @param opener called on every {@link DataSource#getConnection()}, never {@code null}
   * @return a data source whose every {@code getConnection()} is {@code opener.open()}; as
   *     thread-safe as {@code opener}
   */
  public static SimpleDataSource of(Opener opener) {
    Objects.requireNonNull(opener, "opener");
    return new SimpleDataSource() {
      @Override
      public Connection getConnection() throws SQLException {
        return opener.open();
      }
    };
  }

  /** @throws SQLFeatureNotSupportedException always: credentials come from the JDBC URL */
  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("credentials come from the JDBC URL");
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
  public <T> T unwrap(Class<T> type) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> type) {
    return false;
  }
}
