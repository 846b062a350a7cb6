package dev.idem.core;

import java.time.Duration;
import java.util.Objects;

/**
 * Another attempt with the same scope and key holds the claim and has not finished (contract rule
 * 5). Nothing ran. Retry after {@link #retryAfter()}.
 *
 * <p>An HTTP integration maps it to 409 Conflict with a {@code Retry-After} field
 * (draft-ietf-httpapi-idempotency-key-header, section 2.7; RFC 9110 section 10.2.3). Immutable
 * and thread-safe.
 */
public class RequestInProgressException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final Duration retryAfter;

  /**
   * @param key the key that is in progress, never {@code null}
   * @param retryAfter a hint for when to retry, never {@code null} or negative
   */
  public RequestInProgressException(IdempotencyKey key, Duration retryAfter) {
    super("a request with idempotency key '" + key + "' is still in progress; retry after " + retryAfter.toMillis() + " ms");
    this.retryAfter = Objects.requireNonNull(retryAfter, "retryAfter");
  }

  /** @return the suggested wait before the next attempt, never {@code null} */
  public Duration retryAfter() {
    return retryAfter;
  }
}
