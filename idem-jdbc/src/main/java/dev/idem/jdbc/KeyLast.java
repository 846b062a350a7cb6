package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.dialect.KeyTableSql;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * {@link JdbcIdempotency.Strategy#KEY_LAST}: the effect first, then the key's row inserted already
 * completed, with its response. The insert is where duplicates meet: it waits for a concurrent
 * writer of the same key and, once that one committed, inserts nothing; the attempt then rolls
 * back, effect included, and answers from the winner's record. It runs in the transactions of
 * {@link TransactionalIdempotency}'s runner, Idem's own ({@link OwnTransactionRunner}) among them
 * ({@link #inRunnersTransaction}). Stateless apart from its settings; thread-safe.
 */
final class KeyLast {

  private final EngineSettings settings;

  KeyLast(EngineSettings settings) {
    this.settings = settings;
  }

  /**
   * In a transaction that a {@link TransactionRunner} opened for {@link TransactionalIdempotency},
   * which has already looked for a live record: the effect, then the key's row inserted completed,
   * with its response; the runner commits, or, in Idem's own transaction on PostgreSQL, the key
   * statement carries the {@code COMMIT}. One key statement in all (none for an answer the response
   * policy does not store: the runner rolls back).
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
   * @param own Idem's own transaction: the effect's connection is guarded and, on PostgreSQL, the
   *     key statement carries the {@code COMMIT}; {@code null} in a runner's transaction
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
      Effect effect, Runnable onClaimed, OwnTransactionRunner.@Nullable OwnTransaction own) {
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
      response = settings.runEffect(connection, effect, own != null, claim);
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
    // In Idem's own transaction on PostgreSQL the key statement carries the COMMIT (one round trip
    // fewer); one that writes no row fails before it, so nothing commits without its key.
    boolean commitWithKey = own != null && (claimed[0] ? sql.sql.completeThenCommit != null
        : wait == null && sql.sql.recordThenCommit != null);
    try {
      if (claimed[0]) {
        if (commitWithKey) {
          sql.completeAndCommit(connection, request, response, settings.retention());
          OwnTransactionRunner.OwnTransaction.committed(own);
        } else {
          sql.complete(connection, request, response, settings.retention());
        }
      } else if (commitWithKey) {
        if (!sql.recordAndCommit(connection, request, response, settings.retention())) {
          return recordedElsewhere(request);
        }
        OwnTransactionRunner.OwnTransaction.committed(own);
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
      if (commitWithKey && !Transactions.isTransientConflict(e) && !KeyTableSql.wroteNoRow(e)) {
        throw settings.commitUnknown(request, "storing the key and its response or the commit failed", e);
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
