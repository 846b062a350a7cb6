package dev.idem.jdbc;

import dev.idem.core.AttemptResult;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RequestInProgressException;
import java.sql.SQLException;
import java.time.Duration;

/**
 * What a failed attempt of {@link TransactionalIdempotency} means for a retry, as an {@link
 * AttemptResult}: by how far the attempt got (before the effect, after its answer, at the commit)
 * and what the database said. Stateless; thread-safe.
 */
final class AttemptFailures {

  private AttemptFailures() {}

  /** @return in progress: a bounded claim gave up on a concurrent attempt's row, confirmed ({@link RoundEnd.ClaimGaveUp}) */
  static AttemptResult gaveUp(IdempotentRequest request) {
    return AttemptResult.inProgress(new RequestInProgressException(request.key(), Duration.ofSeconds(1)));
  }

  /**
   * Idem's answer before the effect ran, or a failure that is neither Idem's nor the store's.
   *
   * @throws RuntimeException {@code e} itself when it is the caller's error (an aborted caller transaction)
   */
  static AttemptResult beforeEffect(RuntimeException e) {
    if (e instanceof IdempotencyKeyReusedException reused) {
      return AttemptResult.keyReused(reused);
    }
    if (e instanceof RequestInProgressException busy) {
      return AttemptResult.inProgress(busy);
    }
    if (e instanceof IdemException) {
      return AttemptResult.storeFailed(e); // a store failure, an unreadable response, no transaction
    }
    throw e; // the caller's error (an aborted caller transaction), as it is
  }

  /**
   * What a failure after the effect answered means for a retry.
   *
   * @param atCommit whether the transaction's work had completed, so the failure is the commit's
   * @param key the request's key, for an unknown outcome's exception
   */
  static AttemptResult afterAnswer(RuntimeException e, boolean atCommit, IdempotencyKey key) {
    if (e instanceof OutcomeUnknownException unknown) {
      // Idem's own transaction on PostgreSQL: the key statement that carried the COMMIT lost its
      // answer (OwnTransactionRunner).
      return AttemptResult.outcomeUnknown(unknown);
    }
    if (e instanceof EffectFailedException) {
      // PostgreSQL: the effect answered success after an SQL error it caught had aborted its
      // transaction; JdbcIdempotency refused to store a success whose writes cannot commit.
      return AttemptResult.rolledBack(new IdemStoreException("the effect answered success after an SQL error that aborted its"
          + " transaction; nothing was committed or stored: " + e.getMessage(), e), false);
    }
    if (e instanceof TransactionFailedException failed && failed.stage() == TransactionFailedException.Stage.ROLLBACK_ONLY) {
      // Something the effect called marked the transaction rollback-only, and the effect still
      // answered: its writes are gone, and a retry would most likely do the same.
      return AttemptResult.rolledBack(new IdemStoreException("the transaction was marked rollback-only while the effect ran"
          + " and was rolled back: " + e.getMessage(), e), false);
    }
    if (!atCommit) {
      // Idem's own statement after the effect (storing the response, releasing the key) failed:
      // the store's failure, and nothing was committed.
      return AttemptResult.rolledBack(new IdemStoreException("the transaction did not commit: " + e.getMessage(), e), true);
    }
    if (SqlFailure.of(e) == SqlFailure.REJECTED) {
      // The database refused the effect's writes at the commit (a deferred constraint): the
      // request's own failure, which "retry later" would repeat.
      return AttemptResult.rolledBack(new IdemStoreException("the database refused the request's writes at the commit: "
          + e.getMessage(), e), false);
    }
    if (isRollback(e)) {
      return AttemptResult.rolledBack(new IdemStoreException("the transaction was rolled back at the commit: " + e.getMessage(), e), true);
    }
    return AttemptResult.outcomeUnknown(new OutcomeUnknownException(key, Duration.ofSeconds(1), OutcomeUnknownException.Phase.COMMIT, e));
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

  /** @return whether the failure is a transaction that was rolled back because it was marked rollback-only */
  static boolean markedRollbackOnly(RuntimeException e) {
    return e instanceof TransactionFailedException failed && failed.stage() == TransactionFailedException.Stage.ROLLBACK_ONLY;
  }
}
