package dev.idem.spring;

import dev.idem.core.InvalidIdempotencyKeyException;

/**
 * An {@link Idempotent} method was called with {@code null} as its {@link Idempotent.Key}
 * argument, typically because the client sent no key. Nothing ran. Its rule is {@code "empty"}.
 *
 * <p>In a Spring MVC application the starter answers it with 400 and the problem type {@code
 * idempotency-key-missing} (draft-ietf-httpapi-idempotency-key-header, section 2.7), as the filter
 * answers a required key that is missing. Immutable and thread-safe.
 */
public class IdempotencyKeyMissingException extends InvalidIdempotencyKeyException {
  private static final long serialVersionUID = 1L;

  /** @param operation the method that needed the key, for the message, never {@code null} */
  public IdempotencyKeyMissingException(String operation) {
    super("empty", "the idempotency key is missing: " + operation
        + " needs one; send a unique key, such as a UUID, and the same key on every retry");
  }
}
