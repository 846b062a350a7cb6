package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.dialect.KeyTableSql;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.jspecify.annotations.Nullable;

/**
 * The effect in a transaction the caller opened ({@link JdbcIdempotency#execute(Connection,
 * IdempotentRequest, Effect)} on a connection with {@code getAutoCommit() == false}): the
 * claim, the effect, the stored response; the caller commits or rolls back. Idem always claims
 * first here, whatever the strategy, since it cannot undo an effect without rolling back the
 * caller's own work; and it never runs a round again, since only the owner of a transaction may.
 *
 * <p>On PostgreSQL the claim's round trip also sets {@link KeyTableSql#EFFECT_SAVEPOINT}: an SQL
 * error that the effect catches aborts the whole transaction, claim included, and only a rollback
 * to it lets the effect's own client-error answer be stored. Thread-safe; the savepoint
 * bookkeeping is per thread.
 */
final class JoinedTransaction {

  /**
   * How many effects are running on this thread after a claim that set {@link
   * KeyTableSql#EFFECT_SAVEPOINT}. A call made inside such an effect releases the savepoints it
   * set before it returns: left in place, one of them would shadow the outer call's savepoint of
   * the same name, and the outer call's rollback to it would keep the outer effect's writes made
   * before the inner call.
   */
  private static final ThreadLocal<int[]> EFFECTS_AFTER_SAVEPOINT = ThreadLocal.withInitial(() -> new int[1]);

  private final EngineSettings settings;

  JoinedTransaction(EngineSettings settings) {
    this.settings = settings;
  }

  /**
   * @param wait the claim's lock-wait bound ({@link EngineSettings#claimWait} or {@link
   *     EngineSettings#confirmWait}), or {@code null}
   * @param onEnsureClaimed what the effect's {@link dev.idem.core.EffectContext#ensureClaimed()}
   *     runs (the key is the attempt's already), or {@code null} for nothing
   * @return {@link RoundEnd.Answered} with the outcome: executed (stored, or released: only the
   *     claim is removed and the caller decides about the effect), or replayed; or {@link
   *     RoundEnd.ClaimGaveUp} when a bounded claim gave up, after which the caller's transaction
   *     must be rolled back
   * @throws RuntimeException as {@link JdbcIdempotency#execute(Connection, IdempotentRequest,
   *     Effect)} states; the caller's transaction must then be rolled back
   */
  RoundEnd run(Connection connection, Dialect dialect, KeyTable.Statements sql, IdempotentRequest request, Effect effect,
      @Nullable String wait, @Nullable Runnable onEnsureClaimed, OwnTransactionRunner.@Nullable OwnTransaction own) {
    if (!dialect.abortsTransactionOnError() || EFFECTS_AFTER_SAVEPOINT.get()[0] == 0) {
      return claimAndRun(connection, dialect, sql, request, effect, wait, null, onEnsureClaimed, own);
    }
    // Inside another call's effect that relies on the same savepoint name: release ours on the way
    // out, whatever happened (a replay sets one too, in the lookup's round trip).
    int[] savepoints = new int[1];
    try {
      return claimAndRun(connection, dialect, sql, request, effect, wait, savepoints, onEnsureClaimed, own);
    } finally {
      releaseEffectSavepoints(connection, savepoints[0]);
    }
  }

  /**
   * @param savepoints when not {@code null}, counts the savepoints this call set
   * @param own Idem's own transaction: the effect's connection is guarded, a released answer leaves
   *     the claim to the rollback, and on PostgreSQL the completion carries the {@code COMMIT}
   */
  private RoundEnd claimAndRun(Connection connection, Dialect dialect, KeyTable.Statements sql, IdempotentRequest request,
      Effect effect, @Nullable String wait, int @Nullable [] savepoints, @Nullable Runnable onEnsureClaimed,
      OwnTransactionRunner.@Nullable OwnTransaction own) {
    boolean savepointBeforeEffect = dialect.abortsTransactionOnError();
    KeyClaim.Result claim = KeyClaim.claim(settings, connection, sql, request, savepointBeforeEffect, wait, savepoints);
    if (claim instanceof KeyClaim.Busy) {
      return new RoundEnd.ClaimGaveUp();
    }
    if (claim instanceof KeyClaim.Conflict conflict) {
      throw settings.storeFailure("claim failed", conflict.cause());
    }
    if (claim instanceof KeyClaim.Found found) {
      return new RoundEnd.Answered(settings.keys().answer(found.record(), request));
    }
    int[] effectsAfterSavepoint = EFFECTS_AFTER_SAVEPOINT.get();
    StoredResponse response;
    if (savepointBeforeEffect) {
      effectsAfterSavepoint[0]++;
    }
    try {
      response = settings.runEffect(connection, effect, own != null, onEnsureClaimed);
    } finally {
      if (savepointBeforeEffect) {
        effectsAfterSavepoint[0]--;
      }
    }
    if (!settings.responsePolicy().shouldStore(response)) {
      if (own == null) {
        release(connection, request, sql, savepointBeforeEffect);
      } // else Idem's own transaction rolls back, the claim with the effect
      return new RoundEnd.Answered(Outcome.executed(response, false, false));
    }
    boolean commitWithCompletion = own != null && sql.sql.completeThenCommit != null;
    try {
      if (commitWithCompletion) {
        sql.completeAndCommit(connection, request, response, settings.retention());
        OwnTransactionRunner.OwnTransaction.committed(own);
      } else {
        sql.complete(connection, request, response, settings.retention());
      }
    } catch (SQLException e) {
      if (!savepointBeforeEffect || !Transactions.isAborted(e)) {
        if (commitWithCompletion && !KeyTableSql.wroteNoRow(e)) {
          throw settings.commitUnknown(request, "storing the response or the commit failed", e);
        }
        throw settings.storeFailure("storing the response failed", e);
      }
      // PostgreSQL: an SQL error the effect caught aborted the transaction. A client error is the
      // effect's deterministic answer, stored without its writes; any other status would describe
      // writes that did not happen.
      if (response.status() < 400) {
        throw EngineSettings.abortedAnswerRefused(response, e);
      }
      rollbackToEffectSavepoint(connection);
      try {
        sql.complete(connection, request, response, settings.retention());
      } catch (SQLException again) {
        throw settings.storeFailure("storing the response failed", again);
      }
    }
    return new RoundEnd.Answered(Outcome.executed(response));
  }

  /** The caller owns the transaction and decides about the effect; the claim goes. */
  private void release(Connection connection, IdempotentRequest request, KeyTable.Statements sql, boolean savepointBeforeEffect) {
    try {
      sql.release(connection, request);
    } catch (SQLException e) {
      if (!savepointBeforeEffect || !Transactions.isAborted(e)) {
        throw settings.storeFailure("releasing the claim failed", e);
      }
      // The application's own failure answer (a 503 of its own, say) is what the client gets:
      // undo the effect's aborted work and release the claim.
      rollbackToEffectSavepoint(connection);
      try {
        sql.release(connection, request);
      } catch (SQLException again) {
        throw settings.storeFailure("releasing the claim failed", again);
      }
    }
  }

  /** Undoes everything since the savepoint that the claim set on PostgreSQL ({@link KeyTableSql#EFFECT_SAVEPOINT}). */
  private void rollbackToEffectSavepoint(Connection connection) {
    try (Statement st = connection.createStatement()) {
      st.execute("ROLLBACK TO SAVEPOINT " + KeyTableSql.EFFECT_SAVEPOINT);
    } catch (SQLException e) {
      throw settings.storeFailure("cannot roll back to the savepoint set before the effect", e);
    }
  }

  /** Releases the latest {@code count} savepoints named {@link KeyTableSql#EFFECT_SAVEPOINT}; quietly, as the transaction may be aborted. */
  private static void releaseEffectSavepoints(Connection connection, int count) {
    if (count == 0) {
      return;
    }
    try (Statement st = connection.createStatement()) {
      for (int i = 0; i < count; i++) {
        st.execute("RELEASE SAVEPOINT " + KeyTableSql.EFFECT_SAVEPOINT);
      }
    } catch (SQLException e) {
      // an aborted transaction: the caller must roll it back anyway
    }
  }
}
