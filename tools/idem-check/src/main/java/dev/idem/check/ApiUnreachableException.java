package dev.idem.check;

import java.io.IOException;

/**
 * The API cannot be reached at all (connection refused, unknown host, connect timeout): no check
 * can give a verdict. The command line exits with status 2.
 */
public final class ApiUnreachableException extends IOException {

  private static final long serialVersionUID = 1L;

  /**
   * @param message what could not be reached, and why
   * @param cause the underlying failure, may be {@code null}
   */
  public ApiUnreachableException(String message, Throwable cause) {
    super(message, cause);
  }
}
