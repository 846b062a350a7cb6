package dev.idem.core;

/**
 * Receives what the lease-mode engine does, for metrics and logs. Every method has an empty default,
 * so an implementation overrides what it needs. Called on the caller's thread, synchronously:
 * implementations must be thread-safe, fast, and must not throw (an exception is ignored).
 */
public interface IdemListener {

  /** A listener that does nothing. */
  IdemListener NONE = new IdemListener() {};

  /**
   * The effect ran.
   *
   * @param request the request
   * @param outcome executed, stored or released, perhaps a recovery
   */
  default void executed(IdempotentRequest request, Outcome outcome) {}

  /** A stored response was replayed. */
  default void replayed(IdempotentRequest request) {}

  /**
   * The request was refused.
   *
   * @param reason {@code "key-reused"}, {@code "in-progress"}, {@code "lease-lost"}, or {@code
   *     "completion-unknown"} (the effect ran but no completion succeeded within the lease: {@link
   *     CompletionUnknownException})
   */
  default void rejected(IdempotentRequest request, String reason) {}

  /** A duplicate found the claim held and waits for it (once per wait, not per poll). */
  default void waiting(IdempotentRequest request) {}

  /** An expired lease of another owner was taken over. */
  default void takenOver(IdempotentRequest request) {}
}
