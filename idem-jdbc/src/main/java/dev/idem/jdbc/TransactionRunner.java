package dev.idem.jdbc;

import java.sql.Connection;
import javax.sql.DataSource;

/**
 * Runs work in one transaction on one connection of a {@link DataSource}: the seam between {@link
 * TransactionalIdempotency} and whatever manages the application's transactions. {@link
 * DataSourceTransactionRunner} does it with plain JDBC; the Spring Boot starter has one on Spring's
 * {@code PlatformTransactionManager}, so that whatever the handler writes through Spring joins the
 * same transaction.
 *
 * <p>Implementations must be thread-safe: one instance serves every request.
 */
public interface TransactionRunner {

  /**
   * @return the DataSource the transactions run on, never {@code null}: the transactional engine
   *     reads replays from it before a transaction on SQLite, and detects its dialect once
   */
  DataSource dataSource();

  /**
   * Begins a transaction, runs {@code work} in it, then commits, or rolls back when {@code work}
   * threw or marked the transaction rollback-only. After a commit that failed the connection is
   * rolled back before it is given back (SQLite keeps a transaction open after a failed commit).
   *
   * @param work what runs in the transaction, never {@code null}; it must not commit, roll back or
   *     close the connection
   * @param <T> what {@code work} returns
   * @return what {@code work} returned
   * @throws TransactionFailedException with {@link TransactionFailedException.Stage#BEGIN} if no
   *     transaction could begin ({@code work} did not run); with {@link
   *     TransactionFailedException.Stage#COMMIT} if {@code work} returned and the commit failed
   *     (the cause says how: SQLState class 40 is a rollback, anything else may have committed);
   *     with {@link TransactionFailedException.Stage#ROLLBACK_ONLY} if {@code work} returned but
   *     something it called had marked the transaction rollback-only, so it rolled back
   * @throws RuntimeException whatever {@code work} threw, after the rollback
   */
  <T> T inTransaction(Work<T> work);

  /** What runs in the transaction. */
  @FunctionalInterface
  interface Work<T> {
    /**
     * @param connection the transaction's connection, never {@code null}
     * @param transaction lets the work roll the transaction back instead of committing it
     * @return anything, given back by {@link #inTransaction}
     */
    T run(Connection connection, Transaction transaction);
  }

  /** The transaction {@link Work} runs in. */
  interface Transaction {
    /** Rolls the transaction back at its end instead of committing it; what the work returns is still returned. */
    void setRollbackOnly();
  }
}
