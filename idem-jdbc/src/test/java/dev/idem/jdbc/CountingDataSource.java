package dev.idem.jdbc;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A {@link DataSource} that counts, at the JDBC level, what reaches the driver: every statement
 * executed (by its SQL text), every {@code commit}/{@code rollback}, every {@code setAutoCommit}.
 * Like a pool, it hands out one physical connection (opened through a {@link Callable} on first
 * use) again and again, in a new proxy per borrow whose {@code close()} returns it; {@code
 * unwrap(Connection.class)} gives the physical connection, as HikariCP's proxies do. Not
 * thread-safe: for single-threaded counting tests.
 */
final class CountingDataSource implements DataSource {

  private final Callable<Connection> opener;
  /** One entry per call that reaches the server or may: SQL text, or {@code commit()} and the like. */
  final List<String> calls = new ArrayList<>();

  CountingDataSource(Callable<Connection> opener) {
    this.opener = opener;
  }

  void reset() {
    calls.clear();
  }

  /** @return the statements executed, {@code commit()} and {@code rollback()} included */
  long statements() {
    return calls.stream().filter(c -> !c.startsWith("setAutoCommit")).count();
  }

  /** @return the {@code setAutoCommit} calls */
  long autoCommitChanges() {
    return calls.stream().filter(c -> c.startsWith("setAutoCommit")).count();
  }

  private Connection physical;

  @Override
  public Connection getConnection() throws SQLException {
    if (physical == null) {
      try {
        physical = opener.call();
      } catch (SQLException e) {
        throw e;
      } catch (Exception e) {
        throw new SQLException(e);
      }
    }
    return wrap(physical);
  }

  /** Closes the physical connection. */
  void close() throws SQLException {
    if (physical != null) {
      physical.close();
      physical = null;
    }
  }

  private Connection wrap(Connection real) {
    return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class}, new Handler(real) {
      @Override
      Object before(Method m, Object[] args) {
        return null;
      }

      @Override
      boolean skip(Method m) {
        return m.getName().equals("close") || m.getName().equals("unwrap") || m.getName().equals("isWrapperFor");
      }

      @Override
      Object skipped(Method m, Object[] args) {
        switch (m.getName()) {
          case "unwrap":
            return real;
          case "isWrapperFor":
            return args[0] == Connection.class;
          default:
            return null; // close: back to the "pool"
        }
      }

      @Override
      Object after(Method m, Object[] args, Object result) {
        switch (m.getName()) {
          case "commit":
            calls.add("commit()");
            return result;
          case "rollback":
            calls.add("rollback()");
            return result;
          case "setAutoCommit":
            calls.add("setAutoCommit(" + args[0] + ")");
            return result;
          case "createStatement":
            return statement(Statement.class, (Statement) result, null);
          case "prepareStatement":
            return statement(PreparedStatement.class, (Statement) result, (String) args[0]);
          case "prepareCall":
            return statement(CallableStatement.class, (Statement) result, (String) args[0]);
          default:
            return result;
        }
      }
    });
  }

  private Object statement(Class<? extends Statement> type, Statement real, String sql) {
    return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {type}, new Handler(real) {
      @Override
      Object before(Method m, Object[] args) {
        if (m.getName().startsWith("execute")) {
          calls.add(args != null && args.length > 0 && args[0] instanceof String ? (String) args[0] : sql);
        }
        return null;
      }
    });
  }

  /** Forwards every call to the real object. */
  private abstract static class Handler implements InvocationHandler {
    private final Object real;

    Handler(Object real) {
      this.real = real;
    }

    Object before(Method m, Object[] args) {
      return null;
    }

    Object after(Method m, Object[] args, Object result) {
      return result;
    }

    boolean skip(Method m) {
      return false;
    }

    Object skipped(Method m, Object[] args) {
      return null;
    }

    @Override
    public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
      if (skip(m)) {
        return skipped(m, args);
      }
      before(m, args);
      Object result;
      try {
        result = m.invoke(real, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
      return after(m, args, result);
    }
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException();
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
