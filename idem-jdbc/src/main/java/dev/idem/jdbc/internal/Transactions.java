package dev.idem.jdbc.internal;

import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * Begins, commits and rolls back the transactions Idem owns, as the dialect says ({@link
 * Dialect#beginStatement}). On SQLite the write lock is taken at {@code BEGIN IMMEDIATE}, before
 * anything is read, so duplicates queue on the connection's busy timeout instead of failing on a
 * stale snapshot. On MySQL and MariaDB the transaction is begun with {@code START TRANSACTION} and
 * ended with {@code COMMIT} or {@code ROLLBACK}, leaving the session's auto-commit alone: the
 * drivers send {@code SET autocommit} to the server on every {@code setAutoCommit} call, a round
 * trip each way that this saves. On PostgreSQL pgjdbc's {@code setAutoCommit} costs no round trip
 * (the {@code BEGIN} travels with the first statement), so it is used, as on H2. Stateless and
 * thread-safe. Not public API.
 */
public final class Transactions {

  private Transactions() {}

  /**
   * Begins a transaction on a connection in auto-commit mode.
   *
   * @param sqliteBusyTimeout the least {@code busy_timeout} on SQLite; a lower one is raised to it.
   *     It is read the first time a (physical) connection begins here, not at every transaction: a
   *     later {@code PRAGMA busy_timeout} that lowers it again is the caller's choice.
   */
  public static void begin(Connection connection, Dialect dialect, Duration sqliteBusyTimeout) throws SQLException {
    dialect.raiseWriteLockWait(connection, sqliteBusyTimeout);
    String begin = dialect.beginStatement();
    if (begin != null) {
      execute(connection, begin);
    } else {
      connection.setAutoCommit(false);
    }
  }

  /**
   * @return whether transactions that {@link #begin} opens leave the connection in auto-commit mode
   *     as JDBC sees it (the transaction is the server's, begun with a statement)
   */
  public static boolean begunByStatement(Dialect dialect) {
    return dialect.beginStatement() != null;
  }

  private static void execute(Connection connection, String sql) throws SQLException {
    try (Statement st = connection.createStatement()) {
      st.execute(sql);
    }
  }

  /** Commits a transaction begun by {@link #begin}. */
  public static void commit(Connection connection, Dialect dialect) throws SQLException {
    if (begunByStatement(dialect)) {
      execute(connection, "COMMIT");
    } else {
      connection.commit();
    }
  }

  /** Rolls back a transaction begun by {@link #begin}. */
  public static void rollback(Connection connection, Dialect dialect) throws SQLException {
    if (begunByStatement(dialect)) {
      execute(connection, "ROLLBACK");
    } else {
      connection.rollback();
    }
  }

  /** Rolls back, ignoring a failure: the original failure is what the caller needs to see. */
  public static void rollbackQuietly(Connection connection, Dialect dialect) {
    try {
      rollback(connection, dialect);
    } catch (SQLException ignored) {
      // a dead connection rolls back anyway
    }
  }

  /** Puts a connection back in auto-commit mode after {@link #begin}; a broken one is left as is. */
  public static void end(Connection connection, Dialect dialect) {
    if (begunByStatement(dialect)) {
      // The transaction was begun and ended with statements, but a driver may still have turned
      // its own flag off meanwhile (sqlite-jdbc does when the effect sets a savepoint): the caller
      // gave an auto-commit connection and gets one back, or its next call would look like a
      // transaction of its own. sqlite-jdbc sets the flag before the COMMIT it then runs, which
      // fails harmlessly since no transaction is open.
      try {
        if (!connection.getAutoCommit()) {
          try {
            connection.setAutoCommit(true);
          } catch (SQLException noTransactionLeft) {
            // the flag is set; see above
          }
        }
      } catch (SQLException ignored) {
        // the connection is broken; the pool will discard it
      }
      return;
    }
    try {
      connection.setAutoCommit(true);
    } catch (SQLException ignored) {
      // the connection is broken; the pool will discard it
    }
  }

  /**
   * @return whether the failure says the transaction was already aborted by an earlier error
   *     (PostgreSQL's {@code in_failed_sql_transaction}, SQLState 25P02): every statement fails
   *     until a rollback, to a savepoint or of the whole transaction
   */
  public static boolean isAborted(SQLException e) {
    return "25P02".equals(e.getSQLState());
  }

  /** @return whether the whole transaction was rolled back by a conflict and may run again ({@link ConflictRetry#isConflict}) */
  public static boolean isTransientConflict(SQLException e) {
    return ConflictRetry.isConflict(e);
  }
}
