package dev.idem.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Set;

/**
 * The connection an effect gets inside a transaction that Idem owns: every call goes through,
 * except those that would end or escape the transaction ({@code commit}, {@code rollback()}, {@code
 * setAutoCommit}, {@code close}, {@code abort}), which throw {@link SQLException}. Committing from
 * the effect would make the effect durable without its stored response. Rolling back to a savepoint
 * is allowed. {@code getAutoCommit()} answers {@code false}, as the effect is inside a transaction,
 * also where Idem began it with a statement (SQLite, MySQL) and the driver still reports auto-commit.
 * Thread-safety is that of the wrapped connection. Not public API.
 */
final class GuardedConnection implements InvocationHandler {

  private static final Set<String> REFUSED = Set.of("commit", "setAutoCommit", "close", "abort");

  private final Connection target;

  private GuardedConnection(Connection target) {
    this.target = target;
  }

  static Connection wrap(Connection connection) {
    return (Connection) Proxy.newProxyInstance(
        Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, new GuardedConnection(connection));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    boolean plainRollback = name.equals("rollback") && (args == null || args.length == 0);
    if (REFUSED.contains(name) || plainRollback) {
      throw new SQLException(
          "the effect must not call " + name + "(): Idem owns this transaction and commits the effect"
              + " together with its stored response (roll back to a savepoint, or throw, instead)",
          "25000");
    }
    if (name.equals("getAutoCommit")) {
      return Boolean.FALSE;
    }
    if (name.equals("unwrap") && args != null && args[0] == Connection.class) {
      return proxy;
    }
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
