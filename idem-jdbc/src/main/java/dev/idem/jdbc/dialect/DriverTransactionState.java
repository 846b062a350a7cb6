package dev.idem.jdbc.dialect;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import org.jspecify.annotations.Nullable;

/**
 * Whether a connection's session is inside a transaction, as its driver knows from the server's
 * last answer, without a round trip: pgjdbc's transaction state ({@code BaseConnection
 * getTransactionState()}: {@code IDLE} or not), MariaDB Connector/J's server status flag ({@code
 * SERVER_STATUS_IN_TRANS}), MySQL Connector/J's reading of the same flag ({@code ServerSession
 * inTransactionOnServer()}). Read through reflection, since idem-jdbc runs with whichever driver the
 * application brings; a driver that does not say (or changed) answers "not known". Stateless and
 * thread-safe.
 */
final class DriverTransactionState {

  private static final @Nullable Method PG_STATE = method("org.postgresql.core.BaseConnection", "getTransactionState");
  private static final @Nullable Method MARIADB_CONTEXT = method("org.mariadb.jdbc.Connection", "getContext");
  private static final @Nullable Method MARIADB_STATUS = method("org.mariadb.jdbc.client.Context", "getServerStatus");
  private static final @Nullable Method MYSQL_SESSION = method("com.mysql.cj.MysqlConnection", "getSession");
  private static final @Nullable Method MYSQL_SERVER_SESSION = method("com.mysql.cj.Session", "getServerSession");
  private static final @Nullable Method MYSQL_IN_TRANSACTION = method("com.mysql.cj.protocol.ServerSession", "inTransactionOnServer");
  /** MariaDB's {@code ServerStatus.IN_TRANSACTION}, the protocol's {@code SERVER_STATUS_IN_TRANS}. */
  private static final int IN_TRANSACTION = 1;

  private DriverTransactionState() {}

  /**
   * @return whether pgjdbc says the session is in a transaction block ({@code OPEN} or {@code
   *     FAILED}); {@code false} for another driver
   */
  static boolean postgresql(Connection connection) {
    Method state = PG_STATE;
    if (state == null) {
      return false;
    }
    Object driver = unwrap(connection, state.getDeclaringClass());
    if (driver == null) {
      return false;
    }
    try {
      Object value = state.invoke(driver);
      return value != null && !"IDLE".equals(value.toString());
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }

  /** @return whether MariaDB Connector/J says the server is in a transaction; {@code false} for another driver */
  static boolean mariadb(Connection connection) {
    Method context = MARIADB_CONTEXT;
    Method status = MARIADB_STATUS;
    if (context == null || status == null) {
      return false;
    }
    Object driver = unwrap(connection, context.getDeclaringClass());
    if (driver == null) {
      return false;
    }
    try {
      Object ctx = context.invoke(driver);
      return ctx != null && status.invoke(ctx) instanceof Number flags && (flags.intValue() & IN_TRANSACTION) != 0;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }

  /**
   * @return whether MySQL Connector/J (8.0 or later) says the server is in a transaction; {@code
   *     false} for another driver
   */
  static boolean mysqlConnectorJ(Connection connection) {
    Method session = MYSQL_SESSION;
    Method serverSession = MYSQL_SERVER_SESSION;
    Method inTransaction = MYSQL_IN_TRANSACTION;
    if (session == null || serverSession == null || inTransaction == null) {
      return false;
    }
    Object driver = unwrap(connection, session.getDeclaringClass());
    if (driver == null) {
      return false;
    }
    try {
      Object s = session.invoke(driver);
      Object server = s == null ? null : serverSession.invoke(s);
      return server != null && Boolean.TRUE.equals(inTransaction.invoke(server));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }

  private static @Nullable Object unwrap(Connection connection, Class<?> type) {
    try {
      if (type.isInstance(connection)) {
        return connection;
      }
      return connection.isWrapperFor(type) ? connection.unwrap(type) : null;
    } catch (SQLException | RuntimeException e) {
      return null;
    }
  }

  private static @Nullable Method method(String className, String name) {
    try {
      return Class.forName(className, false, DriverTransactionState.class.getClassLoader()).getMethod(name);
    } catch (ReflectiveOperationException | LinkageError e) {
      return null; // that driver is not on the class path
    }
  }
}
