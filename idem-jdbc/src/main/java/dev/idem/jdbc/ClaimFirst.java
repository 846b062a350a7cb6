package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.dialect.KeyTableSql;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/**
 * {@link JdbcIdempotency.Strategy#CLAIM_FIRST} in a transaction Idem owns, one round: the claim
 * ({@link KeyClaim}), the effect, the stored response, then the commit (on PostgreSQL the
 * completion carries the {@code COMMIT}, one round trip). A duplicate's claim waits on the key's
 * primary key for the winner's transaction to end, then replays it. Stateless apart from its
 * settings; thread-safe.
 */
final class ClaimFirst implements OwnTransactionRound {

  private final EngineSettings settings;

  ClaimFirst(EngineSettings settings) {
    this.settings = settings;
  }

  /**
   * One round, in a transaction of its own that has ended when this returns.
   *
   * @return {@link RoundEnd.Answered}, {@link RoundEnd.RolledBack} after a deadlock or
   *     serialization failure anywhere (the claim, the effect, the completion, the commit), or
   *     {@link RoundEnd.EffectAborted} on PostgreSQL
   * @throws RequestInProgressException if a bounded claim gave up on a concurrent attempt's row,
   *     or the key's record is a lease-mode claim
   * @throws RuntimeException the effect's own failure, the key reused, or the store's failure: as
   *     {@link JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)} states
   */
  @Override
  public RoundEnd round(Connection connection, Dialect dialect, KeyTable.Statements sql, IdempotentRequest request, Effect effect) {
    settings.begin(connection, dialect);
    boolean ended = false;
    try {
      KeyClaim.Result claim = KeyClaim.claim(settings, connection, sql, request, false, settings.claimWait(sql), null);
      if (claim instanceof KeyClaim.Busy) {
        throw new RequestInProgressException(request.key(), Duration.ofSeconds(1));
      }
      if (claim instanceof KeyClaim.Conflict conflict) {
        // A deadlock or serialization failure while claiming, before the effect ran: the database
        // rolled the transaction back, so trying the claim again is safe.
        return new RoundEnd.RolledBack(settings.storeFailure("claim kept failing with a transient conflict", conflict.cause()));
      }
      if (claim instanceof KeyClaim.Found found) {
        Outcome replayed = settings.keys().answer(found.record(), request);
        settings.rollback(connection, dialect); // a replay wrote nothing
        ended = true;
        return new RoundEnd.Answered(replayed);
      }
      StoredResponse response = settings.runEffect(connection, effect, true, null);
      if (!settings.responsePolicy().shouldStore(response)) {
        // A released response takes its effect with it.
        settings.rollback(connection, dialect);
        ended = true;
        return new RoundEnd.Answered(Outcome.executed(response, false, false));
      }
      boolean commitWithCompletion = sql.sql.completeThenCommit != null;
      try {
        if (commitWithCompletion) {
          sql.completeAndCommit(connection, request, response, settings.retention());
        } else {
          sql.complete(connection, request, response, settings.retention());
        }
      } catch (SQLException e) {
        if (dialect.abortsTransactionOnError() && Transactions.isAborted(e)) {
          // The effect caught an SQL error of its own and answered, but the error had aborted the
          // transaction. Its writes cannot commit; a client error is its final answer.
          Transactions.rollbackQuietly(connection, dialect);
          ended = true;
          return new RoundEnd.EffectAborted(response, e);
        }
        if (commitWithCompletion && !KeyTableSql.wroteNoRow(e)) {
          throw settings.commitUnknown(request, "storing the response or the commit failed", e);
        }
        throw settings.storeFailure("storing the response failed", e);
      }
      if (!commitWithCompletion) {
        settings.commit(connection, dialect, request);
      }
      ended = true;
      return new RoundEnd.Answered(Outcome.executed(response));
    } catch (RuntimeException failure) {
      // SQLState class 40 later on (in the effect, the completion or the COMMIT, as SERIALIZABLE
      // transactions report it) means the database rolled the whole transaction back, effect
      // included: nothing happened, so the round runs again rather than reporting an unknown
      // outcome.
      Transactions.rollbackQuietly(connection, dialect);
      ended = true;
      if (ConflictRetry.conflictIn(failure) != null) {
        return new RoundEnd.RolledBack(failure);
      }
      throw failure;
    } finally {
      if (!ended) {
        Transactions.rollbackQuietly(connection, dialect);
      }
      Transactions.end(connection, dialect);
    }
  }
}
