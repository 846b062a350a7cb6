package dev.idem.core;

import org.jspecify.annotations.Nullable;

/**
 * The idempotency key was already used, in the same scope, with a different payload (contract
 * rule 2). Nothing ran and nothing was stored by the refused attempt.
 *
 * <p>An HTTP integration maps it to 422 Unprocessable Content
 * (draft-ietf-httpapi-idempotency-key-header, section 2.7). Immutable and thread-safe.
 */
public class IdempotencyKeyReusedException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final transient @Nullable Scope scope;
  private final transient IdempotencyKey key;

  /**
   * @param scope the scope of the key, never {@code null}
   * @param key the key, never {@code null}
   */
  public IdempotencyKeyReusedException(Scope scope, IdempotencyKey key) {
    super(
        "idempotency key '"
            + key
            + "' was already used in scope "
            + scope.principal()
            + " / "
            + scope.operation()
            + " with a different payload");
    this.scope = scope;
    this.key = key;
  }

  /**
   * For a client that only knows the server refused the key (HTTP 422) and not the server's scope.
   *
   * @param key the key, never {@code null}
   * @param detail what the server said, may be empty
   */
  public IdempotencyKeyReusedException(IdempotencyKey key, @Nullable String detail) {
    super("idempotency key '" + key + "' was already used with a different payload" + (detail == null || detail.isEmpty() ? "" : ": " + detail));
    this.scope = null;
    this.key = key;
  }

  /** @return the scope of the reused key; {@code null} when raised by a client that does not know it */
  public @Nullable Scope scope() {
    return scope;
  }

  /** @return the reused key */
  public IdempotencyKey key() {
    return key;
  }
}
