package dev.idem.core;

import java.time.Duration;
import java.util.Objects;

/**
 * Another attempt with the same scope and key holds the claim and has not finished (contract rule
 * 5). Nothing ran. Retry with the same key, at the latest after {@link #retryAfter()}.
 *
 * <p>{@link #retryAfter()} is the time left on the holder's lease (whole seconds, at least 1, as
 * the engines report it): the longest a retry can have to wait, since after it the claim may be
 * taken over. The holder usually finishes long before, so a retry may come sooner.
 *
 * <p>An HTTP integration maps it to 409 Conflict with a {@code Retry-After} field
 * (draft-ietf-httpapi-idempotency-key-header, section 2.7; RFC 9110 section 10.2.3); Idem's
 * servlet filter and Spring Boot starter send that time bounded to a short maximum (by default 1
 * second, {@code IdempotencyFilterConfig.retryAfterSeconds}). Immutable and thread-safe.
 */
public class RequestInProgressException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final Duration retryAfter;

  /**
   * @param key the key that is in progress, never {@code null}
   * @param retryAfter the time left on the holder's lease, never {@code null} or negative
   */
  public RequestInProgressException(IdempotencyKey key, Duration retryAfter) {
    super("a request with idempotency key '" + key + "' is still in progress; retry after " + retryAfter.toMillis() + " ms");
    this.retryAfter = Objects.requireNonNull(retryAfter, "retryAfter");
  }

  /** @return the time left on the holder's lease: the longest wait before a retry; never {@code null} */
  public Duration retryAfter() {
    return retryAfter;
  }
}
