package dev.idem.faultproxy;

import java.io.IOException;

/**
 * An HTTP/1.1 message the proxy cannot frame: malformed syntax, or a head or body over the
 * configured limits. The proxy answers the client with an error response and closes the
 * connection. Package-private; not thread-safe to share, like any exception.
 */
final class HttpFramingException extends IOException {
  private static final long serialVersionUID = 1L;

  private final boolean tooLarge;

  private HttpFramingException(String message, boolean tooLarge) {
    super(message);
    this.tooLarge = tooLarge;
  }

  /** @return an exception for syntax the proxy cannot parse */
  static HttpFramingException malformed(String message) {
    return new HttpFramingException(message, false);
  }

  /** @return an exception for a head or body over a configured limit */
  static HttpFramingException tooLarge(String message) {
    return new HttpFramingException(message, true);
  }

  /** @return whether a limit was exceeded (as opposed to malformed syntax) */
  boolean isTooLarge() {
    return tooLarge;
  }
}
