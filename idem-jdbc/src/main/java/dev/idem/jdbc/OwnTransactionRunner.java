package dev.idem.jdbc;

import dev.idem.jdbc.internal.Transactions;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Objects;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The {@link TransactionRunner} of {@link JdbcIdempotency#execute(Connection,
 * dev.idem.core.IdempotentRequest, dev.idem.core.Effect)} on a connection in auto-commit mode: the
 * transactions Idem owns run on that one connection, begun and ended as the dialect says ({@link
 * Transactions}: a statement on SQLite and MySQL, the driver's flag on PostgreSQL), so that the
 * one transactional engine ({@link TransactionalIdempotency}) runs them as it runs a runner's.
 *
 * <p>Two things a runner cannot do, this one allows: the effect gets a {@link GuardedConnection}
 * (it must not end the transaction Idem commits with its stored response), and the engine's last
 * key statement may carry the {@code COMMIT} (PostgreSQL, {@link OwnTransaction#committed}), one
 * round trip fewer. Its {@link #dataSource()} hands out the same connection, whose {@code close}
 * does nothing, for the reads the engine makes between transactions. One per call; not
 * thread-safe, as the connection is not.
 */
final class OwnTransactionRunner implements TransactionRunner {

  private final Connection connection;
  private final Dialect dialect;
  private final EngineSettings settings;
  private final DataSource sameConnection;

  OwnTransactionRunner(Connection connection, Dialect dialect, EngineSettings settings) {
    this.connection = connection;
    this.dialect = dialect;
    this.settings = settings;
    this.sameConnection = new SameConnection(connection);
  }

  /** @return the dialect of the runner's connection */
  Dialect dialect() {
    return dialect;
  }

  @Override
  public DataSource dataSource() {
    return sameConnection;
  }

  /**
   * @throws dev.idem.core.IdemStoreException if the transaction cannot begin
   * @throws TransactionFailedException if the commit fails ({@link TransactionFailedException.Stage#COMMIT})
   */
  @Override
  public <T> T inTransaction(Work<T> work) {
    settings.begin(connection, dialect);
    OwnTransaction transaction = new OwnTransaction();
    try {
      T value;
      try {
        value = work.run(connection, transaction);
      } catch (RuntimeException | Error e) {
        if (!transaction.committed) {
          Transactions.rollbackQuietly(connection, dialect);
        }
        throw e;
      }
      if (transaction.committed) {
        return value;
      }
      if (transaction.rollbackOnly) {
        Transactions.rollbackQuietly(connection, dialect); // nothing of it is kept either way
        return value;
      }
      try {
        Transactions.commit(connection, dialect);
      } catch (SQLException e) {
        // SQLite keeps the transaction open after a failed commit: end it. Elsewhere a no-op.
        Transactions.rollbackQuietly(connection, dialect);
        throw new TransactionFailedException(TransactionFailedException.Stage.COMMIT, "the commit failed: " + e.getMessage(), e);
      }
      return value;
    } finally {
      Transactions.end(connection, dialect);
    }
  }

  /**
   * A transaction of this runner. The engine's work recognizes it ({@code instanceof}) to guard the
   * effect's connection and to let its last key statement commit.
   */
  static final class OwnTransaction implements Transaction {
    private boolean rollbackOnly;
    private boolean committed;

    @Override
    public void setRollbackOnly() {
      rollbackOnly = true;
    }

    /**
     * Tells the runner that a key statement carried the {@code COMMIT}: there is nothing left to end.
     *
     * @param transaction Idem's own transaction; {@code null} (a runner's) is a programming error
     */
    static void committed(@Nullable OwnTransaction transaction) {
      Objects.requireNonNull(transaction, "a key statement carried the COMMIT of a transaction Idem does not own").committed = true;
    }
  }

  /** The runner's connection as a DataSource, for reads between transactions; {@code close} does nothing. */
  private static final class SameConnection implements DataSource {
    private final Connection proxy;

    SameConnection(Connection connection) {
      this.proxy = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (p, method, args) -> {
            if (method.getName().equals("close")) {
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
      return proxy;
    }

    @Override
    public Connection getConnection(String username, String password) {
      return proxy;
    }

    @Override
    public @Nullable PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(@Nullable PrintWriter out) {
      // no log
    }

    @Override
    public void setLoginTimeout(int seconds) {
      // the connection is open already
    }

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException("no parent logger");
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper of " + iface.getName());
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
