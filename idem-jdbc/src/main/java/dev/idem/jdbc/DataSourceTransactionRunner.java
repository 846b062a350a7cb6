package dev.idem.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * A {@link TransactionRunner} on plain JDBC: each transaction borrows one connection from the
 * {@link DataSource}, turns auto-commit off, runs the work, commits or rolls back, restores
 * auto-commit and closes the connection. For applications without a transaction manager (a plain
 * servlet application, say); the work's code writes on the connection it is given.
 *
 * <p>On SQLite the transaction is SQLite's default (deferred): the key's claim is its first
 * statement and takes the write lock, so a duplicate waits for it on the connection's busy timeout
 * (set one on the DataSource, such as {@code busy_timeout=10000} in the URL). Thread-safe.
 */
public final class DataSourceTransactionRunner implements TransactionRunner {

  private final DataSource dataSource;

  /**
   * @param dataSource where connections come from, never {@code null}
   * @throws NullPointerException if {@code dataSource} is {@code null}
   */
  public DataSourceTransactionRunner(DataSource dataSource) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
  }

  @Override
  public DataSource dataSource() {
    return dataSource;
  }

  @Override
  public <T> T inTransaction(Work<T> work) {
    Objects.requireNonNull(work, "work");
    Connection connection;
    try {
      connection = dataSource.getConnection();
    } catch (SQLException e) {
      throw new TransactionFailedException(TransactionFailedException.Stage.BEGIN, "cannot get a connection: " + e.getMessage(), e);
    }
    try {
      try {
        connection.setAutoCommit(false);
      } catch (SQLException e) {
        throw new TransactionFailedException(TransactionFailedException.Stage.BEGIN, "cannot begin a transaction: " + e.getMessage(), e);
      }
      RollbackOnly rollbackOnly = new RollbackOnly();
      T value;
      try {
        value = work.run(connection, rollbackOnly);
      } catch (RuntimeException | Error e) {
        rollbackQuietly(connection, e);
        throw e;
      }
      if (rollbackOnly.set) {
        rollbackQuietly(connection, null); // nothing of it is kept either way
        return value;
      }
      try {
        connection.commit();
      } catch (SQLException e) {
        // SQLite keeps the transaction open after a failed commit: end it before the connection
        // goes back, or its next borrower would find itself inside it. Elsewhere a no-op.
        rollbackQuietly(connection, e);
        throw new TransactionFailedException(TransactionFailedException.Stage.COMMIT, "the commit failed: " + e.getMessage(), e);
      }
      return value;
    } finally {
      try {
        connection.setAutoCommit(true);
      } catch (SQLException ignored) {
        // a broken connection: the pool discards it
      }
      try {
        connection.close();
      } catch (SQLException ignored) {
        // nothing more to do with it
      }
    }
  }

  private static void rollbackQuietly(Connection connection, @Nullable Throwable failure) {
    try {
      connection.rollback();
    } catch (SQLException | RuntimeException e) {
      if (failure != null) {
        failure.addSuppressed(e); // a dead connection rolls back anyway
      }
    }
  }

  private static final class RollbackOnly implements Transaction {
    boolean set;

    @Override
    public void setRollbackOnly() {
      set = true;
    }
  }
}
