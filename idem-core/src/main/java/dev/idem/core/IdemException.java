package dev.idem.core;

import org.jspecify.annotations.Nullable;

/**
 * The one unchecked root of every exception Idem throws.
 *
 * <p>Catch this type to handle every Idem failure in one place; catch a subclass to react to one
 * rule. Instances are immutable and safe to share between threads.
 */
public class IdemException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what went wrong, never {@code null}
   */
  public IdemException(String message) {
    super(message);
  }

  /**
   * @param message what went wrong, never {@code null}
   * @param cause the underlying failure, may be {@code null}
   */
  public IdemException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
