package dev.idem.spring;

import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.SqlFailure;
import dev.idem.servlet.FilterEngine;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The HTTP filter in transactional mode ({@code idem.mode=transactional}): each matched request runs
 * in one Spring transaction on the application's {@link DataSource}. The key's claim, everything
 * the handler writes through that DataSource ({@code JdbcTemplate}, {@code JdbcClient}, JPA on the
 * same DataSource: whatever joins Spring's transaction) and the stored response commit together, so
 * a create costs one write transaction, and a failure anywhere leaves nothing behind.
 *
 * <ul>
 *   <li>A retry of a completed request is answered from one primary-key read without a lock: on
 *       SQLite on a connection in auto-commit mode before any transaction begins (inside it, the
 *       claim would wait for the single write lock), elsewhere as the transaction's first statement.
 *   <li>A concurrent duplicate blocks on the key's row until the first transaction ends, then
 *       replays it (or, if it rolled back, runs itself). {@code idem.in-progress} does not apply.
 *   <li>A response that {@code JdbcIdempotency}'s response policy does not store (5xx, 408, 425,
 *       429) rolls the whole transaction back, the handler's writes included, and is sent as is.
 *   <li>A handler that throws rolls everything back; the exception reaches the container.
 *   <li>If anything fails after the handler returned (storing the response, the commit), the
 *       transaction rolls back and the handler's answer is not sent; what the client gets depends
 *       on the failure ({@link dev.idem.jdbc.SqlFailure}): a transient one, or a deadlock at the
 *       commit, is a 503 ({@link FilterEngine.RolledBackException}) and the client retries with the
 *       same key; a lost commit acknowledgement is a 503 that says the outcome is unknown and that
 *       a retry with the same key is safe ({@link FilterEngine.OutcomeUnknownException}); a failure
 *       of the request itself (its data refused at the commit, a transaction marked rollback-only,
 *       a success answered after an SQL error that aborted the transaction) is a 500, not "retry
 *       later". After a failed commit the transaction's connection is rolled back before the pool
 *       gets it back.
 *   <li>A handler that answers an SQL error it caught (a 409 for a taken e-mail address) has its
 *       answer stored on every database, PostgreSQL included (see {@link JdbcIdempotency}), and
 *       its own failure answers (a 503 of its own) reach the client as they are.
 *   <li>An answer longer than {@code idem.max-response-size} streams to the client before the
 *       commit, and the key's record stores its status without its body ({@link
 *       StoredResponse#bodyStored()} {@code false}). A failure answer (one the response policy does
 *       not store) rolls the handler's writes back as a short one would; any other commits them
 *       with that record, so a retry is refused with a problem instead of running again. If the
 *       commit fails, the filter aborts the half-sent answer rather than letting it end cleanly.
 * </ul>
 *
 * <p>Only for handlers whose effects are writes to this DataSource; one that calls a payment API or
 * sends mail belongs in lease mode. Thread-safe.
 */
public final class TransactionalFilterEngine implements FilterEngine {

  private final JdbcIdempotency idem;
  private final DataSource dataSource;
  private final TransactionTemplate transactions;
  private volatile Boolean lookupFirst;

  /**
   * @param idem the key table's engine, never {@code null}
   * @param dataSource the DataSource the handlers write to, never {@code null}
   * @param transactionManager the transaction manager of that DataSource, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   */
  public TransactionalFilterEngine(JdbcIdempotency idem, DataSource dataSource, PlatformTransactionManager transactionManager) {
    this.idem = Objects.requireNonNull(idem, "idem");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.transactions = new TransactionTemplate(Objects.requireNonNull(transactionManager, "transactionManager"));
  }

  /**
   * Whether replays are looked up before the transaction: on SQLite only, where JdbcIdempotency
   * skips its own lookup inside a caller's transaction. Decided on the first request that can get
   * a connection; a race decides it twice, the same way.
   */
  private boolean lookupFirst() {
    Boolean known = lookupFirst;
    if (known == null) {
      try (Connection connection = dataSource.getConnection()) {
        known = Dialect.detect(connection) == Dialect.SQLITE;
      } catch (SQLException e) {
        throw new IdemStoreException("cannot get a connection: " + e.getMessage(), e);
      }
      lookupFirst = known;
    }
    return known;
  }

  @Override
  public Outcome execute(IdempotentRequest request, Handler handler) {
    if (lookupFirst()) {
      // SQLite: replays first, on a connection of their own in auto-commit, one primary-key read
      // without a lock; inside the transaction the claim would take the single write lock just to
      // find the stored response. Elsewhere JdbcIdempotency reads first inside the transaction.
      Optional<Outcome> stored;
      try (Connection connection = dataSource.getConnection()) {
        stored = idem.replay(connection, request);
      } catch (SQLException e) {
        throw new IdemStoreException("cannot get a connection to look for a stored response: " + e.getMessage(), e);
      }
      if (stored.isPresent()) {
        return stored.get();
      }
    }
    boolean[] answered = new boolean[1];
    boolean[] returned = new boolean[1]; // the transaction's work is done: a failure now is the commit's
    Outcome outcome;
    try {
      outcome = transactions.execute(status -> {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
          TransactionSynchronizationManager.registerSynchronization(new RollBackAfterFailedCommit(connection));
        }
        try {
          Outcome o = idem.execute(connection, request, c -> {
            StoredResponse response = handler.run(null);
            answered[0] = true;
            return response;
          });
          if (!o.replayed() && !o.stored()) {
            status.setRollbackOnly(); // a released answer takes the handler's writes with it
          }
          returned[0] = true;
          return o;
        } finally {
          DataSourceUtils.releaseConnection(connection, dataSource);
        }
      });
    } catch (RuntimeException e) {
      if (answered[0]) {
        // The handler returned; whatever failed afterwards (storing the response, releasing the
        // key, the commit itself, as a TransactionException or a translated DataAccessException)
        // rolled its writes back, or, at the commit, may have: its answer must not reach the
        // client as if they had happened.
        throw afterAnswer(e, returned[0]);
      }
      if (e instanceof TransactionException) {
        throw new IdemStoreException("cannot run the request's transaction: " + e.getMessage(), e);
      }
      throw e; // the handler's own failure, or Idem's answer before it ran (422, 409, store failure)
    }
    return Objects.requireNonNull(outcome, "outcome");
  }

  /**
   * What a failure after the handler answered means for the client (see {@link
   * FilterEngine.RolledBackException} and {@link FilterEngine.OutcomeUnknownException}).
   *
   * @param atCommit whether the transaction's work had completed, so the failure is the commit's
   */
  static IdemStoreException afterAnswer(RuntimeException e, boolean atCommit) {
    if (e instanceof EffectFailedException) {
      // PostgreSQL: the handler answered success after an SQL error it caught had aborted its
      // transaction; JdbcIdempotency refused to store a success whose writes cannot commit.
      return new RolledBackException("the handler answered success after an SQL error that aborted its transaction;"
          + " nothing was committed or stored: " + e.getMessage(), e, false);
    }
    if (e instanceof UnexpectedRollbackException) {
      // Something the handler called marked the transaction rollback-only, and the handler still
      // answered: its writes are gone, and a retry would most likely do the same.
      return new RolledBackException("the transaction was marked rollback-only while the handler ran (a"
          + " @Transactional method it called failed) and was rolled back: " + e.getMessage(), e, false);
    }
    if (!atCommit) {
      // Idem's own statement after the handler (storing the response, releasing the key) failed:
      // the store's failure, and nothing was committed.
      return new RolledBackException("the transaction did not commit: " + e.getMessage(), e);
    }
    if (SqlFailure.of(e) == SqlFailure.REJECTED) {
      // The database refused the handler's writes at the commit (a deferred constraint): the
      // request's own failure, which "retry later" would repeat.
      return new RolledBackException("the database refused the request's writes at the commit: " + e.getMessage(), e, false);
    }
    if (isRollback(e)) {
      return new RolledBackException("the transaction was rolled back at the commit: " + e.getMessage(), e);
    }
    return new OutcomeUnknownException("the transaction's commit failed, so its outcome is unknown: " + e.getMessage(), e);
  }

  /** @return whether the database says it rolled the transaction back (SQLState class 40) */
  private static boolean isRollback(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLException sql) {
        return sql.getSQLState() != null && sql.getSQLState().startsWith("40");
      }
    }
    return false;
  }

  /**
   * After a failed commit SQLite keeps the transaction open, and sqlite-jdbc's reset of auto-commit
   * hides that from the pool, so the next borrower would find itself inside it (its writes committed
   * with this one's). Spring does not roll back after a failed commit unless told to
   * ({@code rollbackOnCommitFailure}), so this does, on the transaction's own connection. Elsewhere
   * the server has already ended the transaction and the rollback is a no-op.
   */
  private static final class RollBackAfterFailedCommit implements TransactionSynchronization {
    private final Connection connection;

    RollBackAfterFailedCommit(Connection connection) {
      this.connection = connection;
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
