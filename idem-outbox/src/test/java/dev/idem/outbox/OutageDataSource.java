package dev.idem.outbox;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A data source whose database can be taken down and brought back: while down, every new
 * connection is refused, as a pool's is when the database is unreachable. Thread-safe.
 */
final class OutageDataSource implements DataSource {

  private final DataSource delegate;
  private volatile boolean down;
  private final AtomicInteger refused = new AtomicInteger();

  OutageDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  /** Refuses connections from now on, or takes them again. */
  void down(boolean down) {
    this.down = down;
  }

  /** @return how many connections were refused */
  int refused() {
    return refused.get();
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (down) {
      refused.incrementAndGet();
      throw new SQLTransientConnectionException("connection refused: the database is down (test outage)", "08001");
    }
    return delegate.getConnection();
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override public PrintWriter getLogWriter() { return null; }
  @Override public void setLogWriter(PrintWriter out) {}
  @Override public void setLoginTimeout(int seconds) {}
  @Override public int getLoginTimeout() { return 0; }
  @Override public Logger getParentLogger() throws SQLFeatureNotSupportedException { throw new SQLFeatureNotSupportedException(); }
  @Override public <T> T unwrap(Class<T> iface) throws SQLException { throw new SQLException("not a wrapper"); }
  @Override public boolean isWrapperFor(Class<?> iface) { return false; }
}
