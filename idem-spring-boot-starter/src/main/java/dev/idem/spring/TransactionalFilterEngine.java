package dev.idem.spring;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.servlet.FilterEngine;
import dev.idem.core.IdemStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionException;
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
 *       transaction rolls back and the handler's answer is not sent: the filter answers 503
 *       ({@link FilterEngine.RolledBackException}) and the client retries with the same key. After
 *       a failed commit the transaction's connection is rolled back before the pool gets it back.
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
        throw new IdemStoreException("cannot get a connection for key '" + request.key() + "': " + e.getMessage(), e);
      }
      if (stored.isPresent()) {
        return stored.get();
      }
    }
    boolean[] answered = new boolean[1];
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
          return o;
        } finally {
          DataSourceUtils.releaseConnection(connection, dataSource);
        }
      });
    } catch (RuntimeException e) {
      if (answered[0]) {
        // The handler returned; whatever failed afterwards (storing the response, releasing the
        // key, the commit itself, as a TransactionException or a translated DataAccessException)
        // rolled its writes back: its answer must not reach the client as if they had happened.
        throw new RolledBackException("the transaction of key '" + request.key() + "' did not commit: " + e.getMessage(), e);
      }
      if (e instanceof TransactionException) {
        throw new IdemStoreException("cannot run a transaction for key '" + request.key() + "': " + e.getMessage(), e);
      }
      throw e; // the handler's own failure, or Idem's answer before it ran (422, 409, store failure)
    }
    return Objects.requireNonNull(outcome, "outcome");
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
