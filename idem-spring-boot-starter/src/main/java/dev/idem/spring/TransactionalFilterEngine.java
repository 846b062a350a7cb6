package dev.idem.spring;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
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
 *   <li>If the commit fails, the handler's answer is not sent: the filter answers 503 ({@link
 *       FilterEngine.RolledBackException}) and the client retries with the same key.
 *   <li>An answer longer than {@code idem.max-response-size} has streamed to the client before the
 *       commit; the key's record is deleted and the handler's writes commit, so a retry runs again.
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
    AnswerNotStored[] notStored = new AnswerNotStored[1];
    boolean[] ran = new boolean[1];
    Outcome outcome;
    try {
      outcome = transactions.execute(status -> {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
          Outcome o;
          try {
            o = idem.execute(connection, request, c -> {
              ran[0] = true;
              return handler.run(null);
            });
          } catch (AnswerNotStored e) {
            // The answer already went to the client: keep the writes, forget the key.
            idem.release(connection, request);
            notStored[0] = e;
            return null;
          }
          if (!o.replayed() && !o.stored()) {
            status.setRollbackOnly(); // a released answer takes the handler's writes with it
          }
          return o;
        } finally {
          DataSourceUtils.releaseConnection(connection, dataSource);
        }
      });
    } catch (TransactionException e) {
      if (ran[0]) {
        throw new RolledBackException("the transaction of key '" + request.key() + "' did not commit: " + e.getMessage(), e);
      }
      throw new IdemStoreException("cannot run a transaction for key '" + request.key() + "': " + e.getMessage(), e);
    }
    if (notStored[0] != null) {
      throw notStored[0];
    }
    return Objects.requireNonNull(outcome, "outcome");
  }
}
