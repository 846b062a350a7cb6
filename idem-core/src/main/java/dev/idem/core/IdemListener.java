package dev.idem.core;

/**
 * Receives what an {@link IdempotencyEngine} does, in lease and in transactional mode, for metrics
 * and logs. Every engine tells {@link #attempted} of each attempt's {@link AttemptResult}, once; its
 * default dispatches to {@link #executed}, {@link #replayed} and {@link #rejected}, so an
 * implementation overrides what it needs. {@link #waiting} and {@link #takenOver} are lease mode's
 * events during an attempt. Called on the caller's thread, synchronously: implementations must be
 * thread-safe, fast, and must not throw (an exception is ignored).
 */
public interface IdemListener {

  /** A listener that does nothing. */
  IdemListener NONE = new IdemListener() {};

  /**
   * One attempt ended with {@code result}. The default tells {@link #replayed} of a replay, {@link
   * #executed} of an effect that ran and whose response is given (stored or released), and {@link
   * #rejected} with {@link AttemptResult#rejectionReason()} of a refusal or of an effect that ran
   * without a response to give; store failures before the effect ran are not told.
   *
   * @param request the request, never {@code null}
   * @param result what happened, never {@code null}
   */
  default void attempted(IdempotentRequest request, AttemptResult result) {
    switch (result.kind()) {
      case REPLAYED:
        replayed(request);
        break;
      case EXECUTED:
      case RELEASED:
        executed(request, result.outcome().orElseThrow());
        break;
      default:
        result.rejectionReason().ifPresent(reason -> rejected(request, reason));
    }
  }

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
   * @param reason {@code "key-reused"}, {@code "in-progress"}, {@code "outcome-unknown"} (the
   *     effect ran and whether its result was kept is unknown: {@link OutcomeUnknownException}, in
   *     either mode), {@code "lease-lost"} (lease mode: the lease was taken over before the
   *     completion); in transactional mode also {@code "rolled-back"} and {@code "request-failed"}
   *     (see {@link AttemptResult.Kind})
   */
  default void rejected(IdempotentRequest request, String reason) {}

  /** A duplicate found the claim held and waits for it (once per wait, not per poll). */
  default void waiting(IdempotentRequest request) {}

  /** An expired lease of another owner was taken over. */
  default void takenOver(IdempotentRequest request) {}

  /**
   * A request an HTTP integration refused before it reached an engine: no key where one is
   * required ({@code key-missing}), a malformed key ({@code key-malformed}), a body that cannot be
   * read as its media type ({@code payload-invalid}) or that is over the limit ({@code
   * body-too-large}). Called on the request's thread; must not throw (an exception is ignored).
   *
   * @param operation the route's operation, such as {@code "POST /notes"}, never {@code null}:
   *     low-cardinality, never a key
   * @param reason one of the reasons above, never {@code null}
   */
  default void refused(String operation, String reason) {}
}
