package dev.idem.core.steps;

import dev.idem.core.StoredResponse;

/**
 * An operation of named steps under one idempotency key. Its body runs every step through {@link
 * Steps}, in the same order on every run, and returns the operation's final response, which is
 * stored and replayed like any other. On a resumed run (a retry after a crash, or the completer) the
 * body runs again from the top, but each step already recorded is not run again: {@link Steps}
 * returns its recorded result. So the body must not have effects of its own outside steps, and must
 * decide each step's name from the operation's input and earlier steps' results only.
 *
 * <p>Implementations are stateless or thread-safe: the completer may run one on another thread.
 */
@FunctionalInterface
public interface StepOperation {

  /**
   * @param steps runs and records the steps of this operation, never {@code null}
   * @param input the operation's input bytes as the first attempt gave them (recorded with the
   *     operation, so that a resume and the completer see the same), never {@code null}
   * @return the final response, never {@code null}
   * @throws Exception to stop this run: the steps recorded so far stay recorded, and a later run
   *     (a retry after the lease, or the completer) resumes after the last of them
   */
  StoredResponse run(Steps steps, byte[] input) throws Exception;
}
