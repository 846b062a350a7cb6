package dev.idem.spring.internal;

import dev.idem.jdbc.TransactionFailedException;
import dev.idem.jdbc.TransactionRunner;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.TransactionSystemException;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A {@link TransactionRunner} on Spring's {@link PlatformTransactionManager}: the work runs in a
 * Spring transaction on the DataSource's transactional connection ({@link DataSourceUtils}), so
 * that whatever the handler writes through Spring ({@code JdbcTemplate}, {@code JdbcClient}, JPA on
 * the same DataSource) joins it. A commit that fails after the work returned is reported as {@link
 * TransactionFailedException.Stage#COMMIT}, or {@link TransactionFailedException.Stage#ROLLBACK_ONLY}
 * when something the handler called had marked the transaction rollback-only ({@link
 * UnexpectedRollbackException}); a transaction that cannot begin as {@link
 * TransactionFailedException.Stage#BEGIN}. Thread-safe.
 */
public final class SpringTransactionRunner implements TransactionRunner {

  private static final Logger LOG = LoggerFactory.getLogger(SpringTransactionRunner.class);

  private final DataSource dataSource;
  private final Supplier<PlatformTransactionManager> transactionManager;
  private volatile PlatformTransactionManager manager;
  /** Whether a suspension of the request's transaction was logged at WARN already (then DEBUG). */
  private final AtomicBoolean suspensionWarned = new AtomicBoolean();

  /**
   * @param dataSource the DataSource the handlers write to, never {@code null}
   * @param transactionManager its transaction manager, looked up at the first transaction; never
   *     {@code null}, and must not supply {@code null}
   */
  public SpringTransactionRunner(DataSource dataSource, Supplier<PlatformTransactionManager> transactionManager) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.transactionManager = Objects.requireNonNull(transactionManager, "transactionManager");
  }

  @Override
  public DataSource dataSource() {
    return dataSource;
  }

  private PlatformTransactionManager manager() {
    PlatformTransactionManager tm = manager;
    if (tm == null) {
      tm = Objects.requireNonNull(transactionManager.get(), "transactionManager");
      manager = tm;
    }
    return tm;
  }

  /**
   * As Spring's {@code TransactionTemplate.execute} with the default definition, except for a
   * rollback that fails after the work failed (a connection the database had closed): the template
   * logs "Application exception overridden by rollback exception" at ERROR and throws the
   * rollback's failure; here the work's failure is thrown, the rollback's suppressed in it and
   * logged at DEBUG, since the filter classifies and logs the failure once, at its level.
   */
  private <T> T execute(TransactionCallback<T> action) {
    PlatformTransactionManager tm = manager();
    TransactionStatus status = tm.getTransaction(TransactionDefinition.withDefaults());
    T result;
    try {
      result = action.doInTransaction(status);
    } catch (RuntimeException | Error failure) {
      try {
        tm.rollback(status);
      } catch (RuntimeException | Error rollbackFailure) {
        failure.addSuppressed(rollbackFailure);
        LOG.debug("the rollback after a failed request failed too (the connection is gone, so nothing committed)", rollbackFailure);
      }
      throw failure;
    }
    tm.commit(status);
    return result;
  }

  @Override
  public <T> T inTransaction(Work<T> work) {
    Objects.requireNonNull(work, "work");
    Stage stage = new Stage();
    try {
      return execute(status -> {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
          TransactionSynchronizationManager.registerSynchronization(new RequestTransactionWatch(connection, suspensionWarned));
        }
        try {
          stage.begun = true;
          T value = work.run(connection, status::setRollbackOnly);
          stage.returned = true;
          return value;
        } finally {
          DataSourceUtils.releaseConnection(connection, dataSource);
        }
      });
    } catch (UnexpectedRollbackException e) {
      if (!stage.returned) {
        throw e;
      }
      throw new TransactionFailedException(TransactionFailedException.Stage.ROLLBACK_ONLY,
          "the transaction was marked rollback-only (a @Transactional method the handler called failed) and was rolled back: "
              + e.getMessage(), e);
    } catch (RuntimeException e) {
      if (stage.returned) {
        // The work is done: a failure now (a TransactionException, or a translated
        // DataAccessException) is the commit's.
        throw new TransactionFailedException(TransactionFailedException.Stage.COMMIT, "the commit failed: " + e.getMessage(), e);
      }
      if (!stage.begun && e instanceof TransactionException) {
        throw new TransactionFailedException(TransactionFailedException.Stage.BEGIN,
            "cannot run the request's transaction: " + e.getMessage(), e);
      }
      if (e instanceof TransactionSystemException rollback && rollback.getApplicationException() != null) {
        // The work failed (a store failure, the handler's own exception), and the rollback Spring
        // then tried failed too: the connection is gone, so nothing committed. Spring throws the
        // rollback's failure in place of the work's; what happened is the work's failure.
        Throwable original = rollback.getApplicationException();
        original.addSuppressed(rollback);
        if (original instanceof RuntimeException runtime) {
          throw runtime;
        }
        if (original instanceof Error error) {
          throw error;
        }
      }
      throw e;
    }
  }

  /** How far one transaction got. */
  private static final class Stage {
    boolean begun;
    boolean returned;
  }

  /**
   * Watches the request's transaction.
   *
   * <p>After a failed commit SQLite keeps the transaction open, and sqlite-jdbc's reset of auto-commit
   * hides that from the pool, so the next borrower would find itself inside it (its writes committed
   * with this one's). Spring does not roll back after a failed commit unless told to
   * ({@code rollbackOnCommitFailure}), so this does, on the transaction's own connection. Elsewhere
   * the server has already ended the transaction and the rollback is a no-op.
   *
   * <p>A transaction that the handler starts with {@code REQUIRES_NEW} (or a {@code NOT_SUPPORTED}
   * method) suspends the request's: what it writes commits on its own, outside the key's
   * transaction, survives a failed request and is written again by its retry. Idem cannot undo it;
   * the first suspension is logged at WARN, later ones at DEBUG.
   */
  private static final class RequestTransactionWatch implements TransactionSynchronization {
    private final Connection connection;
    private final AtomicBoolean warned;

    RequestTransactionWatch(Connection connection, AtomicBoolean warned) {
      this.connection = connection;
      this.warned = warned;
    }

    @Override
    public void suspend() {
      String message = "Idem: the handler suspended the request's transaction (a REQUIRES_NEW or NOT_SUPPORTED method):"
          + " what it writes outside that transaction commits on its own, is not undone if the request fails, and is"
          + " written again by a retry with the same key. Keep the request's writes in its transaction (REQUIRED, the"
          + " default), or make the separate write idempotent itself";
      if (warned.compareAndSet(false, true)) {
        LOG.warn(message + " (logged once; later suspensions at DEBUG)");
      } else {
        LOG.debug(message);
      }
    }

    @Override
    public void afterCompletion(int status) {
      if (status == STATUS_UNKNOWN) {
        try {
          connection.rollback();
        } catch (SQLException | RuntimeException ignored) {
          // a broken connection: the pool discards it
        }
      }
    }
  }
}
