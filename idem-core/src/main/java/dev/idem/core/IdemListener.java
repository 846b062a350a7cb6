package dev.idem.core;

import java.util.Map;
import java.util.Objects;

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

  /** The {@code mode} an engine in lease mode gives {@link #started}: {@value}. */
  String LEASE_MODE = "lease";

  /** The {@code mode} an engine in transactional mode gives {@link #started}: {@value}. */
  String TRANSACTIONAL_MODE = "transactional";

  /**
   * One attempt, from {@link #started} to its end: for observations that time it and that the
   * effect's own work happens inside of (a span, a scope). Each {@code Attempt} is ended exactly
   * once, on the thread that started it, by {@link #ended} or {@link #failed}.
   */
  interface Attempt {

    /** An attempt nobody observes. */
    Attempt NONE = new Attempt() {
      @Override
      public void ended(AttemptResult result) {}

      @Override
      public void failed(Throwable error) {}
    };

    /**
     * The attempt ended with a result (told to {@link IdemListener#attempted} right after).
     *
     * @param result what happened, never {@code null}
     */
    void ended(AttemptResult result);

    /**
     * The attempt ended with an exception out of the engine: the effect's own (an unchecked one,
     * or a checked one wrapped in {@link EffectFailedException}), or a broken precondition. No
     * result is told to {@link IdemListener#attempted}.
     *
     * @param error the exception, never {@code null}
     */
    void failed(Throwable error);

    /**
     * The trace context of this attempt, to keep with the key's record: an engine asks once, when
     * the effect has answered, and stores it with the answer ({@link
     * StoredResponse#withTraceContext}), so that a later replay finds it in {@link
     * StoredResponse#traceContext()} and can point at this attempt's trace (a span link). The
     * default keeps none.
     *
     * @return field name to value in the application's propagation format (W3C Trace Context:
     *     {@code traceparent}, {@code tracestate}); empty for none; never {@code null}. Must not
     *     throw (the answer is then stored without it)
     */
    default Map<String, String> traceContext() {
      return Map.of();
    }
  }

  /**
   * The effect an engine runs for an observed attempt: {@code effect}, whose answer keeps {@code
   * attempt}'s {@linkplain Attempt#traceContext() trace context} (when it has one, and when it
   * fits in a header field; tracing never fails an attempt). For engines.
   *
   * @param attempt what {@link #start} returned, never {@code null}
   * @param effect the caller's effect, never {@code null}
   * @return the effect to run instead, never {@code null}
   */
  static Effect keepingTraceContext(Attempt attempt, Effect effect) {
    Objects.requireNonNull(effect, "effect");
    if (attempt == Attempt.NONE) {
      return effect;
    }
    return context -> withTraceContext(attempt, effect.run(context));
  }

  /**
   * {@code response} keeping {@code attempt}'s trace context, as {@link #keepingTraceContext}; for
   * engines that run an effect themselves (a non-blocking one).
   *
   * @param attempt what {@link #start} returned, never {@code null}
   * @param response the effect's answer (an effect that broke its contract and answered {@code
   *     null} gets {@code null} back, which the engine refuses)
   * @return the answer to store
   */
  static StoredResponse withTraceContext(Attempt attempt, StoredResponse response) {
    if (attempt == Attempt.NONE) {
      return response;
    }
    try {
      Map<String, String> context = attempt.traceContext();
      if (context == null || context.isEmpty()) {
        return response;
      }
      // a field that cannot be kept (too long, CR or LF, not a field name) is left out, not the others
      Map<String, String> kept = new java.util.LinkedHashMap<>();
      context.forEach((name, value) -> {
        if (name != null && value != null && !name.isEmpty()
            && name.length() + StoredResponse.TRACE_CONTEXT_HEADER_PREFIX.length() <= StoredResponse.MAX_HEADER_LENGTH
            && value.length() <= StoredResponse.MAX_HEADER_LENGTH
            && name.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != ':')
            && value.chars().noneMatch(c -> c == '\r' || c == '\n' || c == 0)) {
          kept.put(name, value);
        }
      });
      return kept.isEmpty() ? response : response.withTraceContext(kept);
    } catch (RuntimeException e) {
      return response; // a listener's failure: the answer without it
    }
  }

  /**
   * An attempt begins, on the caller's thread, before the engine reads or writes anything; what
   * the attempt does (the effect included) runs between this call and the end of the returned
   * {@link Attempt}, on the same thread. The default observes nothing.
   *
   * @param request the request, never {@code null}
   * @param mode {@link #LEASE_MODE} or {@link #TRANSACTIONAL_MODE}
   * @return the attempt's observation, never {@code null}; {@link Attempt#NONE} for none. Must not
   *     throw (an engine then observes the attempt with {@link Attempt#NONE})
   */
  default Attempt started(IdempotentRequest request, String mode) {
    return Attempt.NONE;
  }

  /**
   * An attempt of a non-blocking engine ({@link AsyncLeaseIdempotency}) begins: as {@link
   * #started}, but the attempt goes on on other threads (an event loop, a store client's I/O
   * thread) and its {@link Attempt} is ended on whichever thread completes it. An implementation
   * must therefore bind nothing to the calling thread (no thread-local scope, no current span):
   * what it binds would stay on an event-loop thread and leak into unrelated requests. The default
   * calls {@link #started}, which is right for a listener that binds nothing to a thread (counters,
   * logs); one that does (an observation's scope) overrides this.
   *
   * @param request the request, never {@code null}
   * @param mode {@link #LEASE_MODE}
   * @return the attempt's observation, never {@code null}; {@link Attempt#NONE} for none. Must not
   *     throw (an engine then observes the attempt with {@link Attempt#NONE})
   */
  default Attempt startedAsync(IdempotentRequest request, String mode) {
    return started(request, mode);
  }

  /**
   * Calls {@link #startedAsync} and never throws, as {@link #start} does. For non-blocking engines.
   *
   * @param listener the engine's listener, never {@code null}
   * @param request the request, never {@code null}
   * @param mode {@link #LEASE_MODE}
   * @return what {@code listener} returned, or {@link Attempt#NONE} if it threw or returned {@code null}
   */
  static Attempt startAsync(IdemListener listener, IdempotentRequest request, String mode) {
    try {
      Attempt attempt = listener.startedAsync(request, mode);
      return attempt == null ? Attempt.NONE : attempt;
    } catch (RuntimeException e) {
      return Attempt.NONE;
    }
  }

  /**
   * Calls {@link #started} and never throws: a listener's failure leaves the attempt unobserved.
   * For engines.
   *
   * @param listener the engine's listener, never {@code null}
   * @param request the request, never {@code null}
   * @param mode {@link #LEASE_MODE} or {@link #TRANSACTIONAL_MODE}
   * @return what {@code listener} returned, or {@link Attempt#NONE} if it threw or returned {@code null}
   */
  static Attempt start(IdemListener listener, IdempotentRequest request, String mode) {
    try {
      Attempt attempt = listener.started(request, mode);
      return attempt == null ? Attempt.NONE : attempt;
    } catch (RuntimeException e) {
      return Attempt.NONE;
    }
  }

  /**
   * Ends {@code attempt} with {@code result}, then tells {@link #attempted}; neither may change
   * the result, so what they throw is ignored. For engines.
   *
   * @param listener the engine's listener, never {@code null}
   * @param attempt what {@link #start} returned, never {@code null}
   * @param request the request, never {@code null}
   * @param result the result, never {@code null}
   */
  static void end(IdemListener listener, Attempt attempt, IdempotentRequest request, AttemptResult result) {
    try {
      attempt.ended(result);
    } catch (RuntimeException ignored) {
      // an observation must not change the result
    }
    try {
      listener.attempted(request, result);
    } catch (RuntimeException ignored) {
      // a listener must not change the result
    }
  }

  /**
   * Ends {@code attempt} with an exception out of the engine; what it throws is ignored. For engines.
   *
   * @param attempt what {@link #start} returned, never {@code null}
   * @param error the exception, never {@code null}
   */
  static void fail(Attempt attempt, Throwable error) {
    try {
      attempt.failed(error);
    } catch (RuntimeException ignored) {
      // an observation must not hide the effect's exception
    }
  }

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
