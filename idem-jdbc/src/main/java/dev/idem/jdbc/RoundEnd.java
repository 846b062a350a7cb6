package dev.idem.jdbc;

import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import java.sql.SQLException;

/**
 * How one round in a transaction Idem owns ended, as a value ({@link ClaimFirst#round}, {@link
 * KeyLast#round}); {@link JdbcIdempotency} runs the rounds on {@link
 * dev.idem.jdbc.internal.ConflictRetry#rounds} and turns the last one into its result or its
 * exception. The round's transaction has ended when the value is returned.
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
   * {@link JdbcIdempotency.Strategy#KEY_LAST}: the effect met racing duplicates in its own locks
   * (SQLState class 40) and was rolled back; the next rounds take the key first, so that they
   * wait for the winner instead of meeting it again.
   */
  record TakeKeyFirst() implements RoundEnd {}

  /**
   * PostgreSQL: the effect answered {@code response} after an SQL error it caught ({@code aborted})
   * had aborted the transaction; rolled back. A client error is recorded alone in the next round;
   * any other answer is refused ({@link EngineSettings#abortedAnswerRefused}).
   */
  record EffectAborted(StoredResponse response, SQLException aborted) implements RoundEnd {}
}
