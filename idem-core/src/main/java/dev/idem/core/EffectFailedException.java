package dev.idem.core;

/**
 * Wraps a checked exception thrown by the caller's effect. Unchecked exceptions from the effect
 * are rethrown as they are.
 *
 * <p>When it is thrown, the claim was released (transactional mode: the whole transaction was
 * rolled back), so a retry with the same key runs the operation again (contract rule 6).
 * {@link #getCause()} is the original exception. Immutable and thread-safe.
 */
public class EffectFailedException extends IdemException {
  private static final long serialVersionUID = 1L;

  /** @param cause the checked exception thrown by the effect, never {@code null} */
  public EffectFailedException(Throwable cause) {
    super("the idempotent operation failed: " + cause, cause);
  }
}
