package dev.idem.lab;

/**
 * A simulated failure after the commit: the operation took effect, but its response never reached
 * the caller (a timeout, a dropped connection). Thrown by the lab and by tests to reproduce the
 * case that makes a naive retry create a second effect. Immutable and thread-safe.
 */
public final class ResponseLostException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** @param attempt the 1-based attempt whose response was lost */
  public ResponseLostException(int attempt) {
    super("simulated: the response of attempt " + attempt + " was lost after the commit");
  }
}
