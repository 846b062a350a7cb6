package dev.idem.jdbc;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import java.time.Duration;

/**
 * Key-last order in a {@link TransactionRunner}'s transaction ({@link
 * JdbcIdempotency#runThenRecord(java.sql.Connection, dev.idem.core.IdempotentRequest,
 * KeyLast.ClaimingEffect)}): why this attempt's transaction must roll back although its
 * effect ran. Thrown out of the runner's work so that the runner rolls back; {@link
 * TransactionalIdempotency} turns it into the attempt's result. Never reaches a caller. A {@link
 * RequestInProgressException}, as {@link dev.idem.core.EffectContext#ensureClaimed()} promises to
 * the effect that meets it.
 */
final class KeyTaken extends RequestInProgressException {
  private static final long serialVersionUID = 1L;

  /** What took the key. */
  enum Reason {
    /** A live record of another attempt refused this one's: the next read answers from it. */
    RECORDED,
    /** Another attempt's row is held by a transaction still open, and the claim's wait is bounded. */
    IN_PROGRESS,
    /**
     * PostgreSQL: an SQL error the effect caught had aborted the transaction, so the effect's
     * answer ({@link #response}) cannot commit with its writes.
     */
    ABORTED_BY_EFFECT
  }

  final Reason reason;
  final transient StoredResponse response;

  private KeyTaken(Reason reason, IdempotencyKey key, StoredResponse response, Throwable cause) {
    super(key, Duration.ofSeconds(1));
    this.reason = reason;
    this.response = response;
    if (cause != null) {
      initCause(cause);
    }
  }

  static KeyTaken recorded(IdempotencyKey key) {
    return new KeyTaken(Reason.RECORDED, key, null, null);
  }

  static KeyTaken inProgress(IdempotencyKey key) {
    return new KeyTaken(Reason.IN_PROGRESS, key, null, null);
  }

  static KeyTaken abortedByEffect(IdempotencyKey key, StoredResponse response, Throwable cause) {
    return new KeyTaken(Reason.ABORTED_BY_EFFECT, key, response, cause);
  }
}
