package dev.idem.core;

import java.util.Objects;

/**
 * One attempt at an operation, as the engine sees it: the scope, the idempotency key and the
 * fingerprint of the payload.
 *
 * <p>Two requests with the same scope and key are attempts at the same operation; if their
 * fingerprints differ the second is refused with {@link IdempotencyKeyReusedException}.
 * Immutable and thread-safe.
 *
 * @param scope who and which operation, never {@code null}
 * @param key the idempotency key, never {@code null}
 * @param fingerprint the SHA-256 of the canonical payload, never {@code null}
 */
public record IdempotentRequest(Scope scope, IdempotencyKey key, Fingerprint fingerprint) {

  /** @throws NullPointerException if any component is {@code null} */
  public IdempotentRequest {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(fingerprint, "fingerprint");
  }

  /**
   * Convenience for a JSON payload.
   *
   * @param principal the scope's principal
   * @param operation the scope's operation
   * @param key the raw idempotency key, validated by {@link IdempotencyKey#of(String)}
   * @param json the payload, UTF-8 JSON, fingerprinted by {@link Fingerprint#ofJson(byte[])}
   * @throws InvalidIdempotencyKeyException if the key is malformed
   * @throws InvalidPayloadException if the payload is not valid JSON
   * @throws IllegalArgumentException if a scope part is malformed
   */
  public static IdempotentRequest ofJson(String principal, String operation, String key, byte[] json) {
    return new IdempotentRequest(
        Scope.of(principal, operation), IdempotencyKey.of(key), Fingerprint.ofJson(json));
  }
}
