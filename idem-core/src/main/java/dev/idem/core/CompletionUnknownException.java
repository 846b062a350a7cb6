package dev.idem.core;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Lease mode: the effect ran, but its response could not be stored. Every completion of the claim
 * ({@link dev.idem.core.spi.LeaseStore#complete}, retried with the same owner token within the
 * lease) failed with a store error, so whether the response is stored is unknown: the last write
 * may have happened and only its acknowledgement been lost.
 *
 * <p>The response the effect returned must not be sent as the answer: a later retry could
 * contradict it. What a retry with the same scope and key gets instead:
 *
 * <ul>
 *   <li>before the lease ends: {@link RequestInProgressException} (or a wait), since the claim is
 *       still held;
 *   <li>if a completion was written after all: the stored response, replayed;
 *   <li>otherwise, once the lease has ended: the claim, taken over with {@link
 *       LeaseContext#recovery()} {@code true}; the effect runs again and must reconcile with what
 *       the first run did (look its result up by the idempotency key, pass the key downstream).
 * </ul>
 *
 * <p>So a retry with the same key is safe; a retry with a new key is not. An HTTP integration maps
 * it to 503 Service Unavailable with {@code Retry-After} of {@link #retryAfter()} (RFC 9110 sections
 * 15.6.4 and 10.2.3), saying that the outcome is unknown. Immutable and thread-safe.
 */
public class CompletionUnknownException extends IdemStoreException {
  private static final long serialVersionUID = 1L;

  private final transient IdempotencyKey key;
  private final Duration retryAfter;

  /**
   * @param key the key whose completion failed, never {@code null}
   * @param retryAfter when a retry can expect a final answer (the rest of the lease, at least one
   *     second), never {@code null} or negative
   * @param cause the store's last failure, may be {@code null}
   */
  public CompletionUnknownException(IdempotencyKey key, Duration retryAfter, @Nullable Throwable cause) {
    super("the effect for idempotency key '" + key + "' ran, but its response could not be stored: whether it is stored is unknown;"
        + " retry with the same key after " + Objects.requireNonNull(retryAfter, "retryAfter").toSeconds()
        + " s (a retry replays the stored response, or takes the claim over as a recovery)", cause);
    this.key = Objects.requireNonNull(key, "key");
    this.retryAfter = retryAfter;
  }

  /** @return the key whose completion failed, never {@code null} */
  public IdempotencyKey key() {
    return key;
  }

  /** @return the suggested wait before a retry with the same key: at least one second, never {@code null} */
  public Duration retryAfter() {
    return retryAfter;
  }
}
