package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.KeyRow;
import dev.idem.jdbc.internal.LogRef;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/**
 * {@link JdbcIdempotency.Strategy#KEY_LAST}: the effect first, then the key's row inserted already
 * completed, with its response. The insert is where duplicates meet: it waits for a concurrent
 * writer of the same key and, once that one committed, inserts nothing; the attempt then rolls
 * back, effect included, and answers from the winner's record. Two places use it: a round in a
 * transaction Idem owns ({@link #round}), and the transaction a {@link TransactionRunner} opened
 * for {@link TransactionalIdempotency} ({@link #inRunnersTransaction}). Stateless apart from its
 * settings; thread-safe.
 */
final class KeyLast implements OwnTransactionRound {

  private final EngineSettings settings;

  KeyLast(EngineSettings settings) {
    this.settings = settings;
  }

  /**
   * One round in a transaction of its own that has ended when this returns: the effect, the
   * completed key row, the commit (on PostgreSQL the insert carries the {@code COMMIT}, one round
   * trip; an insert that inserts nothing fails before the {@code COMMIT} runs, so the effect never
   * commits without its key).
   *
   * @return {@link RoundEnd.Answered} (executed, or the winner's record), {@link
   *     RoundEnd.RolledBack} (class 40 at the commit, or the record that refused the key vanished),
   *     {@link RoundEnd.TakeKeyFirst} (class 40 in the effect or the insert, against a racer still
   *     running), or {@link RoundEnd.EffectAborted} on PostgreSQL
   * @throws RuntimeException the effect's own failure when no winner's record answers, the key
   *     reused, or the store's failure
   */
  @Override
  public RoundEnd round(Connection connection, Dialect dialect, KeyTable.Statements sql, IdempotentRequest request, Effect effect) {
    settings.begin(connection, dialect);
    boolean ended = false;
    try {
      StoredResponse response;
      try {
        response = settings.runEffect(connection, effect, true, null);
      } catch (RuntimeException failure) {
        // A racing duplicate's effect can fail on the winner's rows (a unique constraint of its
        // own, a deadlock). Once rolled back, the winner's record, if there is one, answers.
        Transactions.rollbackQuietly(connection, dialect);
        ended = true;
        KeyRow winner = KeyTable.lookupQuietly(connection, sql, request);
        if (winner != null && !winner.orphaned()) {
          return new RoundEnd.Answered(settings.keys().answer(winner, request));
        }
        if (ConflictRetry.conflictIn(failure) == null) {
          throw failure;
        }
        // A deadlock or serialization failure of the effect, likely against a racing duplicate
        // that is still running: the database undid this run. Running the effect first again
        // would meet the same racers in the same locks (eight racers deadlocked past five
        // rounds), so this attempt takes the key first instead: its claim waits for the
        // winner's transaction and replays it, or, if there was none, runs once.
        return new RoundEnd.TakeKeyFirst(false);
      }
      if (!settings.responsePolicy().shouldStore(response)) {
        settings.rollback(connection, dialect);
        ended = true;
        // An answer that is not stored (a 5xx) may be the effect's failure on a racing winner's
        // rows, caught and answered: the winner's record, if any, answers instead, as it does in a
        // runner's transaction (TransactionalIdempotency).
        KeyRow winner = KeyTable.lookupQuietly(connection, sql, request);
        if (winner != null && !winner.orphaned()) {
          return new RoundEnd.Answered(settings.keys().answer(winner, request));
        }
        return new RoundEnd.Answered(Outcome.executed(response, false, false));
      }
      boolean recorded;
      boolean conflicted = false;
      boolean commitWithRecord = sql.sql.recordThenCommit != null;
      try {
        recorded = commitWithRecord ? sql.recordAndCommit(connection, request, response, settings.retention())
            : sql.record(connection, request, response, settings.retention());
      } catch (SQLException e) {
        if (dialect.abortsTransactionOnError() && Transactions.isAborted(e)) {
          // The effect caught an SQL error that aborted the transaction: a client error is
          // recorded alone in the next round, anything else is refused.
          Transactions.rollbackQuietly(connection, dialect);
          ended = true;
          return new RoundEnd.EffectAborted(response, e);
        }
        if (!Transactions.isTransientConflict(e)) {
          throw commitWithRecord ? settings.commitUnknown(request, "storing the key and its response or the commit failed", e)
              : settings.storeFailure("storing the key and its response failed", e);
        }
        // A deadlock or serialization failure: the database rolled back the effect too; the
        // winner's record, if any, is looked for below.
        conflicted = true;
        recorded = false;
      }
      if (recorded) {
        if (!commitWithRecord) {
          try {
            settings.commit(connection, dialect, request);
          } catch (IdemStoreException failure) {
            // SQLState class 40 at COMMIT (SERIALIZABLE): the database rolled it all back, so
            // nothing happened and the round runs again; any other failure leaves the outcome unknown.
            if (ConflictRetry.conflictIn(failure) == null) {
              throw failure;
            }
            return new RoundEnd.RolledBack(failure);
          }
        }
        ended = true;
        return new RoundEnd.Answered(Outcome.executed(response));
      }
      settings.rollback(connection, dialect);
      ended = true;
      Outcome stored = settings.keys().answerIfLive(connection, sql, request);
      if (stored != null) {
        return new RoundEnd.Answered(stored);
      }
      if (conflicted) {
        return new RoundEnd.TakeKeyFirst(false); // see the effect's conflict above
      }
      // The record that refused the insert expired or was released since: run again.
      return new RoundEnd.RolledBack(new IdemStoreException(
          "could not record " + LogRef.of(request.scope(), request.key()) + " after " + ConflictRetry.MAX_ATTEMPTS + " rounds",
          null));
    } finally {
      if (!ended) {
        Transactions.rollbackQuietly(connection, dialect);
      }
      Transactions.end(connection, dialect);
    }
  }

  /**
   * In a transaction that a {@link TransactionRunner} opened for {@link TransactionalIdempotency},
   * which has already looked for a live record: the effect, then the key's row inserted completed,
   * with its response; the runner commits. One key statement in all (none for an answer the
   * response policy does not store: the runner rolls back).
   *
   * <p>With {@link JdbcIdempotency.Builder#claimLockWait} the insert gives up on a row held by a
   * transaction still open. An effect that calls {@code ensureClaimed} (an answer about to stream
   * to the client) claims the key at that moment, and the completion is then an update of its
   * claim; a claim that meets another attempt's record or row throws {@link
   * RequestInProgressException} into the effect, as {@link
   * dev.idem.core.EffectContext#ensureClaimed()} promises, and the round ends as the claim found,
   * whatever the effect then did.
   *
   * @param effect run with the transaction's connection and a context whose {@code ensureClaimed}
   *     claims the key
   * @param onClaimed run after each {@code ensureClaimed} that found the key this attempt's
   * @return {@link RoundEnd.Answered} with the executed outcome (stored, or not stored: the caller
   *     rolls the runner's transaction back); otherwise the caller must roll the runner's
   *     transaction back, effect included: {@link RoundEnd.RolledBack} when a winner's record
   *     refused the key (the next round's read answers from it), {@link RoundEnd.TakeKeyFirst}
   *     with {@code confirmWait} when a bounded key statement gave up on a lock, {@link
   *     RoundEnd.EffectAborted} on PostgreSQL when an SQL error the effect caught had aborted the
   *     transaction; never {@code null}
   * @throws IdemStoreException if a key statement failed (a deadlock or serialization failure,
   *     SQLState class 40, among them: the caller finds it in the cause)
   * @throws EffectFailedException if the effect threw a checked exception
   * @throws RuntimeException the effect's own unchecked exception, as it is
   */
  RoundEnd inRunnersTransaction(Connection connection, Dialect dialect, KeyTable.Statements sql, IdempotentRequest request,
      Effect effect, Runnable onClaimed) {
    String wait = settings.claimWait(sql);
    boolean[] claimed = new boolean[1];
    // What the claim met, kept: the effect must not go on as if it held the key, even when it
    // catches the exception and answers (a web framework's error handling would). Either how the
    // round ends (the key taken) or the claim statement's failure.
    RoundEnd[] taken = new RoundEnd[1];
    RuntimeException[] failed = new RuntimeException[1];
    Runnable claim = () -> {
      if (taken[0] == null && failed[0] == null && !claimed[0]) {
        try {
          if (sql.claim(connection, request, settings.retention(), false, wait)) {
            claimed[0] = true;
          } else {
            taken[0] = recordedElsewhere(request);
          }
        } catch (SQLException e) {
          if (wait != null && sql.sql.isClaimWaitExceeded(e)) {
            taken[0] = new RoundEnd.TakeKeyFirst(true);
          } else {
            failed[0] = settings.storeFailure("claim failed", e);
          }
        }
      }
      if (failed[0] != null) {
        throw failed[0];
      }
      if (taken[0] != null) {
        throw new RequestInProgressException(request.key(), Duration.ofSeconds(1));
      }
      onClaimed.run();
    };
    StoredResponse response;
    try {
      response = settings.runEffect(connection, effect, false, claim);
    } catch (RuntimeException e) {
      if (failed[0] != null) {
        throw failed[0];
      }
      if (taken[0] != null) {
        return taken[0];
      }
      throw e;
    }
    if (failed[0] != null) {
      throw failed[0];
    }
    if (taken[0] != null) {
      return taken[0];
    }
    if (!settings.responsePolicy().shouldStore(response)) {
      // the runner rolls back, the claim if any with it
      return new RoundEnd.Answered(Outcome.executed(response, false, false));
    }
    try {
      if (claimed[0]) {
        sql.complete(connection, request, response, settings.retention());
      } else if (!sql.record(connection, request, response, settings.retention(), wait)) {
        return recordedElsewhere(request);
      }
    } catch (SQLException e) {
      if (wait != null && sql.sql.isClaimWaitExceeded(e)) {
        // The bounded insert gave up on a lock: a concurrent attempt's row of this key, or one that
        // any insert meets for a moment. The key taken first, with a longer wait once, tells them apart.
        return new RoundEnd.TakeKeyFirst(true);
      }
      if (dialect.abortsTransactionOnError() && Transactions.isAborted(e)) {
        return new RoundEnd.EffectAborted(response, e);
      }
      throw settings.storeFailure("storing the key and its response failed", e);
    }
    return new RoundEnd.Answered(Outcome.executed(response));
  }

  /**
   * A live record of another attempt refused this one's key: once the runner rolled back, the next
   * round's read answers from it.
   */
  private static RoundEnd recordedElsewhere(IdempotentRequest request) {
    return new RoundEnd.RolledBack(new IdemStoreException("could not record the key after " + ConflictRetry.MAX_ATTEMPTS
        + " rounds: its record kept changing", null));
  }
}
