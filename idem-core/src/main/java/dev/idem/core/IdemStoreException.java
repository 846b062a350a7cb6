package dev.idem.core;

import org.jspecify.annotations.Nullable;

/**
 * The store failed or could not be reached (connection refused, lock timeout, I/O error). The
 * transaction that was in progress was rolled back, so no half-written record is left behind;
 * retrying later with the same key is safe.
 *
 * <p>An HTTP integration maps it to 503 Service Unavailable. Immutable and thread-safe.
 */
public class IdemStoreException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what failed, never {@code null}
   * @param cause the driver's exception, may be {@code null}
   */
  public IdemStoreException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
