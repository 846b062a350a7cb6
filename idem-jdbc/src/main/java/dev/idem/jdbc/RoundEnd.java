package dev.idem.jdbc;

import java.sql.Connection;

import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.sql.SQLException;

/**
 * How one round's work in an open transaction ended, as a value: claim-first work ({@link
 * JoinedTransaction}) or key-last work ({@link KeyLast#inRunnersTransaction}) in a transaction of a
 * {@link TransactionRunner} (Idem's own among them), which the runner then commits (an {@link
 * Answered} outcome that is stored, or a replay) or rolls back (anything else). {@link
 * AttemptRounds}, the one round loop, runs the rounds on {@link
 * dev.idem.jdbc.internal.ConflictRetry#rounds} and turns the last one into the attempt's result; no
 * exception steers a round. Immutable.
 */
sealed interface RoundEnd {

  /** @param outcome the final answer: executed now (committed, or released and rolled back), or replayed */
  record Answered(Outcome outcome) implements RoundEnd {}

  /**
   * The database rolled the round back (a deadlock or serialization failure, SQLState class 40),
   * or the record that refused the key vanished: nothing of the round remains, run another.
   *
   * @param ifLast what to throw when no round is left
   */
  record RolledBack(RuntimeException ifLast) implements RoundEnd {}

  /**
   * {@link JdbcIdempotency.Strategy#KEY_LAST}, the one fall-back to claim-first order: the round
   * was rolled back, effect included, and the next rounds take the key first. Either the effect
   * met racing duplicates in its own locks (SQLState class 40), and claiming first waits for the
   * winner instead of meeting it again; or, in a runner's transaction, a bounded key statement
   * ({@link JdbcIdempotency.Builder#claimLockWait}) gave up on a lock, which may be a concurrent
   * attempt's row of the key or one that any insert meets for a moment.
   *
   * @param confirmWait whether the first claim waits {@link EngineSettings#confirmWait} (the
   *     bounded statement's give-up is confirmed: a duplicate's row outlasts that wait, a momentary
   *     lock does not) rather than the claim's own bound
   */
  record TakeKeyFirst(boolean confirmWait) implements RoundEnd {}

  /**
   * Claim-first order in a transaction the caller or a {@link TransactionRunner} opened: the claim,
   * whose lock wait was bounded ({@link JdbcIdempotency.Builder#claimLockWait}), gave up (PostgreSQL
   * 55P03, MariaDB 1205) before the effect ran; the transaction must roll back. Most often a
   * concurrent attempt of the same key holds its row, but the bound is not specific to that row: on
   * PostgreSQL {@code lock_timeout} ends any lock wait of the statement, a relation extension lock
   * held for a moment while concurrent inserts grow the table or an index, or a table lock of DDL,
   * among them. {@link TransactionalIdempotency} therefore confirms the give-up once with a longer
   * bound ({@link EngineSettings#confirmWait}) before it answers in progress; {@link
   * JdbcIdempotency#execute(Connection, dev.idem.core.IdempotentRequest, dev.idem.core.Effect)}
   * throws {@link dev.idem.core.RequestInProgressException}, as its caller expects.
   */
  record ClaimGaveUp() implements RoundEnd {}

  /**
   * PostgreSQL: the effect answered {@code response} after an SQL error it caught ({@code aborted})
   * had aborted the transaction; rolled back. A client error is recorded alone in the next round;
   * any other answer is refused ({@link EngineSettings#abortedAnswerRefused}).
   */
  record EffectAborted(StoredResponse response, SQLException aborted) implements RoundEnd {}
}
