package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.ResponsePolicy;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What the pieces of the transactional engine share ({@link KeyLast}, {@link JoinedTransaction},
 * {@link OwnTransactionRunner}): the key table, the settings of {@link JdbcIdempotency.Builder},
 * and the steps every order takes (running the effect, beginning and ending a transaction of
 * Idem's own).
 * Immutable and thread-safe.
 *
 * @param keys the key table
 * @param retention how long a completed record lives
 * @param responsePolicy which responses are stored
 * @param claimLockWait the bound of a claim's wait for a concurrent attempt's row, or {@code null}
 * @param sqliteBusyTimeout the least wait for SQLite's write lock in Idem's own transactions
 */
record EngineSettings(
    KeyTable keys, Duration retention, ResponsePolicy responsePolicy, @Nullable Duration claimLockWait,
    Duration sqliteBusyTimeout) {

  /**
   * @return the bound of the claim's lock wait as PostgreSQL writes it ({@code "5ms"}), or {@code
   *     null} where the claim waits as long as the database does (no bound set, or none possible
   *     with these statements)
   */
  @Nullable String claimWait(KeyTable.Statements sql) {
    return claimLockWait != null && sql.sql.boundedClaim != null ? Math.max(1, claimLockWait.toMillis()) + "ms" : null;
  }

  /** The least wait of a claim that confirms a bounded key statement's give-up ({@link #confirmWait}). */
  static final java.time.Duration CONFIRM_WAIT = java.time.Duration.ofMillis(100);

  /**
   * The lock-wait bound of the one claim that confirms a bounded key statement's give-up before
   * it is answered in progress ({@link RoundEnd.ClaimGaveUp}): {@link #CONFIRM_WAIT}, or the claim's own
   * bound if longer. A bound of a few milliseconds is also met by locks that have nothing to do
   * with the key (PostgreSQL's relation extension lock while concurrent inserts grow the table or
   * an index, a table lock of DDL); those are held for moments, a duplicate's row for its whole
   * transaction. On MariaDB the bounded statement's wait is fixed in its text (no wait at all), so
   * the confirmation is that statement once more.
   *
   * @return the bound as PostgreSQL writes it, or {@code null} where claims are not bounded
   */
  @Nullable String confirmWait(KeyTable.Statements sql) {
    Duration wait = claimLockWait;
    if (wait == null || claimWait(sql) == null) {
      return null;
    }
    return Math.max(CONFIRM_WAIT.toMillis(), wait.toMillis()) + "ms";
  }

  /**
   * Runs the effect on the transaction's connection.
   *
   * @param ownTransaction whether the transaction is Idem's own: the effect then gets a connection
   *     that refuses to end it ({@link GuardedConnection})
   * @param claim what the effect's {@link EffectContext#ensureClaimed()} runs, or {@code null} when
   *     the key is already the attempt's and there is nothing to run
   * @return the effect's response, never {@code null}
   * @throws IdemStoreException if the database failed while the effect ran (connection lost,
   *     resources short): a store outage, nothing committed
   * @throws EffectFailedException if the effect threw a checked exception (its SQL errors included)
   * @throws IllegalStateException if the effect returned {@code null}
   * @throws RuntimeException the effect's own unchecked exception, as it is
   */
  StoredResponse runEffect(Connection connection, Effect effect, boolean ownTransaction, @Nullable Runnable claim) {
    Connection effects = ownTransaction ? GuardedConnection.wrap(connection) : connection;
    StoredResponse response;
    try {
      response = effect.run(claim == null ? EffectContext.ofTransaction(effects) : EffectContext.ofTransaction(effects, claim));
    } catch (RuntimeException e) {
      throw e;
    } catch (SQLException e) {
      if (SqlFailure.of(e) == SqlFailure.TRANSIENT && !Transactions.isTransientConflict(e)) {
        // The connection was lost, or the database is short of resources or shutting down: a store
        // outage, not the request's fault. (A deadlock or serialization failure, class 40, runs
        // the round again instead.)
        throw storeFailure("the database failed while the effect ran; nothing was committed", e);
      }
      throw new EffectFailedException(e);
    } catch (Exception e) {
      throw new EffectFailedException(e);
    }
    if (response == null) {
      throw new IllegalStateException("the effect returned null; it must return the response to store");
    }
    return response;
  }

  /** Begins a transaction of Idem's own (on SQLite: {@code BEGIN IMMEDIATE}, after raising the busy timeout). */
  void begin(Connection connection, Dialect dialect) {
    try {
      Transactions.begin(connection, dialect, sqliteBusyTimeout);
    } catch (SQLException e) {
      throw storeFailure("cannot begin a transaction", e);
    }
  }

  /**
   * @throws OutcomeUnknownException if the commit failed without saying it rolled back: its
   *     outcome is unknown
   * @throws IdemStoreException if the database rolled the transaction back at the commit (a class 40
   *     SQLState in its cause)
   */
  void commit(Connection connection, Dialect dialect, IdempotentRequest request) {
    try {
      Transactions.commit(connection, dialect);
    } catch (SQLException e) {
      throw commitUnknown(request, "commit failed", e);
    }
  }

  /**
   * A statement that ends in the commit (or the COMMIT itself) failed: unless the database says it
   * rolled the transaction back (SQLState class 40: a deadlock or serialization failure, a conflict
   * the caller runs again), whether it committed is unknown.
   *
   * @return {@link OutcomeUnknownException} ({@link OutcomeUnknownException.Phase#COMMIT}), or what
   *     {@link #storeFailure} returns for a rollback or an aborted transaction
   */
  RuntimeException commitUnknown(IdempotentRequest request, String what, SQLException e) {
    RuntimeException failure = storeFailure(what + ", so the outcome is unknown; retry with the same key: it replays if"
        + " the commit took effect", e);
    if (!(failure instanceof IdemStoreException) || ConflictRetry.conflictIn(e) != null) {
      return failure;
    }
    return new OutcomeUnknownException(request.key(), Duration.ofSeconds(1), OutcomeUnknownException.Phase.COMMIT, failure);
  }

  void rollback(Connection connection, Dialect dialect) {
    try {
      Transactions.rollback(connection, dialect);
    } catch (SQLException e) {
      throw storeFailure("rollback failed", e);
    }
  }

  RuntimeException storeFailure(String what, SQLException e) {
    return keys.storeFailure(what, e);
  }

  /**
   * PostgreSQL: the effect returned {@code response}, but an SQL error it caught had aborted the
   * transaction (SQLState 25P02 at Idem's next statement, {@code aborted}), so none of its writes
   * can commit.
   *
   * @return the failure reported when that answer cannot be stored without its writes (it is not
   *     a client error, or no round is left to store it alone)
   */
  static EffectFailedException abortedAnswerRefused(StoredResponse response, SQLException aborted) {
    return new EffectFailedException(new SQLException(
        "the effect answered " + response.status() + " although an SQL error it caught had aborted its transaction"
            + " (PostgreSQL rejects every later statement of an aborted transaction): its writes were rolled back, so"
            + " that answer would describe an effect that did not happen. Nothing was stored. Undo the failed statement"
            + " with a savepoint of the effect's own (Connection.setSavepoint, rollback(savepoint)), or let the error"
            + " propagate", aborted.getSQLState(), aborted));
  }
}
