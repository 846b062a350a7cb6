package dev.idem.benchmarks;

import dev.idem.lab.jdbc.SimpleDataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;

/**
 * A {@link javax.sql.DataSource} that hands out one client's own connection every time, and whose {@code
 * close()} leaves it open: how the harness gives a store that borrows connections (JdbcLeaseStore,
 * Camel's repository) exactly one connection per client, like a pool of one. Not thread-safe, as
 * the connection is not.
 */
final class OneConnectionDataSource extends SimpleDataSource {

  private final Connection shared;

  OneConnectionDataSource(Connection connection) {
    this.shared = (Connection) Proxy.newProxyInstance(
        Connection.class.getClassLoader(),
        new Class<?>[] {Connection.class},
        (proxy, method, args) -> {
          if (method.getName().equals("close") && method.getParameterCount() == 0) {
            return null;
          }
          try {
            return method.invoke(connection, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  @Override
  public Connection getConnection() {
    return shared;
  }
}
