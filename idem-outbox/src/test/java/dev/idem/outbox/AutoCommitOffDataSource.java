package dev.idem.outbox;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A data source that hands out connections as a pool configured with auto-commit off does (such
 * as HikariCP's {@code autoCommit=false}): each borrow comes with auto-commit off, and a close
 * rolls back whatever the borrower left uncommitted, then returns the connection.
 */
final class AutoCommitOffDataSource implements DataSource {

  private final DataSource delegate;

  AutoCommitOffDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection physical = delegate.getConnection();
    physical.setAutoCommit(false);
    return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (p, m, args) -> {
      if (m.getName().equals("close")) {
        if (!physical.isClosed() && !physical.getAutoCommit()) {
          physical.rollback();
        }
        physical.close();
        return null;
      }
      try {
        return m.invoke(physical, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    });
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
