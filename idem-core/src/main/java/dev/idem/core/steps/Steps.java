package dev.idem.core.steps;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import java.sql.Connection;

/**
 * What a {@link StepOperation} runs its steps through. A step's name is 1 to 64 characters of
 * {@code A-Z a-z 0-9 . _ -}, unique within the operation. A step's result is a string (a JSON text,
 * an id), at most {@value #MAX_RESULT_CHARS} characters, recorded as the step's recovery point; a
 * step already recorded is never run again: its recorded result is returned.
 *
 * <p>Used by the thread that runs the operation only; not thread-safe.
 */
public interface Steps {

  /** The longest result a step may record, in characters: {@value}. */
  int MAX_RESULT_CHARS = 1 << 20;

  /** @return the operation's scope, never {@code null} */
  Scope scope();

  /** @return the operation's idempotency key, never {@code null} */
  IdempotencyKey key();

  /**
   * @return whether this run resumes an operation an earlier run left unfinished (a retry whose
   *     lease took over an expired one, or the completer)
   */
  boolean resumed();

  /**
   * A local step: {@code body} runs in one database transaction on {@code connection}, and the
   * step's recovery point (its name and result) is written in the same transaction, with a check
   * that this run still holds the operation's lease (fencing). Either all of it commits or none.
   *
   * @param name the step's name
   * @param body the step's writes, never {@code null}; it must not commit, roll back or close the
   *     connection
   * @return the step's result: what {@code body} returned now, or what it returned on the run that
   *     recorded it
   * @throws IllegalArgumentException if {@code name} or the result breaks the rules above
   * @throws dev.idem.core.LeaseLostException if another run took the operation over (nothing of
   *     this step is kept)
   * @throws Exception what {@code body} threw (nothing of this step is kept)
   */
  String local(String name, LocalStep body) throws Exception;

  /**
   * A foreign call: {@code call} runs outside any transaction with the step's {@linkplain
   * DerivedKeys derived key}, the same on every run, to send as the {@code Idempotency-Key} of a
   * service that honours keys; its answer is then recorded as the step's result. If the run stops
   * between the call and the record, the next run calls again with the same derived key, and the
   * foreign service answers from its store instead of acting twice.
   *
   * @param name the step's name
   * @param call the call, never {@code null}
   * @return the step's result: the call's answer now, or the recorded one
   * @throws IllegalArgumentException if {@code name} or the result breaks the rules above
   * @throws dev.idem.core.LeaseLostException if another run took the operation over
   * @throws Exception what {@code call} threw (nothing recorded)
   */
  String foreign(String name, ForeignCall call) throws Exception;

  /** A local step's writes, in the step's transaction. */
  @FunctionalInterface
  interface LocalStep {
    /**
     * @param connection the transaction's connection, never {@code null}
     * @return the step's result, never {@code null}
     * @throws Exception to roll the step back
     */
    String run(Connection connection) throws Exception;
  }

  /** A call to a foreign service with the step's derived key. */
  @FunctionalInterface
  interface ForeignCall {
    /**
     * @param derivedKey the key to send, never {@code null}; the same for this step on every run
     * @return the foreign service's answer, to record, never {@code null}
     * @throws Exception when the call failed or its outcome is unknown (nothing is recorded; the
     *     next run calls again with the same key)
     */
    String call(IdempotencyKey derivedKey) throws Exception;
  }
}
