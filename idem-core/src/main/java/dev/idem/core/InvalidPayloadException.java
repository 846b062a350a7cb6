package dev.idem.core;

import org.jspecify.annotations.Nullable;

/**
 * A payload could not be fingerprinted: it was declared as JSON (a {@code application/json} or
 * {@code +json} media type) but is not a valid JSON text per RFC 8259, or it is not valid UTF-8.
 *
 * <p>The message names the problem and, where known, the byte offset at which parsing stopped. An
 * HTTP integration maps it to 400 Bad Request. Immutable and thread-safe.
 */
public class InvalidPayloadException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what is wrong with the payload, never {@code null}
   */
  public InvalidPayloadException(String message) {
    super(message);
  }

  /**
   * @param message what is wrong with the payload, never {@code null}
   * @param cause the underlying failure, may be {@code null}
   */
  public InvalidPayloadException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
