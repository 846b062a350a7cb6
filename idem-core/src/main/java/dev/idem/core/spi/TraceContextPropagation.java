package dev.idem.core.spi;

import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Carries the trace context of the span current on the calling thread into what Idem stores for
 * later (an outbox intent, which becomes a message), and continues it where Idem handles that later
 * (the idempotent consumer of the message). The context travels as the headers of the <a
 * href="https://www.w3.org/TR/trace-context/">W3C Trace Context</a> recommendation: {@value
 * #TRACEPARENT} and, when the tracer keeps vendor state, {@value #TRACESTATE}; a tracer configured
 * with another propagation format (B3, for one) may give its own header names, which are carried
 * the same way.
 *
 * <p>Idem needs no tracer of its own: the Spring Boot starter implements this over Micrometer
 * Tracing when the application has a tracer; without the starter, implement the two methods with
 * the application's tracer (an OpenTelemetry {@code TextMapPropagator} injects and extracts exactly
 * these headers). {@link #NONE} carries nothing.
 *
 * <p>Implementations must be thread-safe: one instance serves every request and every message at
 * once. Both methods are called on the thread that handles the request or the message.
 */
public interface TraceContextPropagation {

  /** The W3C header that names the trace and the parent span: {@value}. */
  String TRACEPARENT = "traceparent";

  /** The W3C header of vendor-specific trace state: {@value}. */
  String TRACESTATE = "tracestate";

  /** Carries nothing, continues nothing: {@link #continueTrace} just runs the work. */
  TraceContextPropagation NONE = new TraceContextPropagation() {
    @Override
    public Map<String, String> currentContext() {
      return Map.of();
    }

    @Override
    public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
      return work.get();
    }

    @Override
    public String toString() {
      return "TraceContextPropagation.NONE";
    }
  };

  /**
   * The context of the span current on the calling thread, as headers to store and send with what
   * the request caused.
   *
   * @return header names (lower case) and values, such as {@code traceparent ->
   *     00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01}; empty, never {@code null}, when no
   *     span is current. A context that is not sampled is given too (its flags say so), so that the
   *     consumer's span is not sampled either rather than the root of a trace of its own. Must not
   *     throw: a failure to read the context is an empty map (tracing never fails a request)
   */
  Map<String, String> currentContext();

  /**
   * {@link #currentContext()} of {@code tracing} for a caller that must not fail because of it: a
   * propagation that throws, or breaks its contract and answers {@code null}, gives an empty map.
   *
   * @param tracing the propagation, never {@code null}; {@link #NONE} is not asked
   * @return the current context, or an empty map; never {@code null}
   */
  static Map<String, String> currentContextOrEmpty(TraceContextPropagation tracing) {
    if (tracing == NONE) {
      return Map.of();
    }
    try {
      Map<String, String> context = tracing.currentContext();
      return context == null ? Map.of() : context;
    } catch (RuntimeException e) {
      return Map.of(); // tracing never fails what it observes
    }
  }

  /**
   * Runs {@code work} in a span of its own, a consumer's, whose parent is the context in {@code
   * carrier}: the handling of a message joins the trace of the request that wrote it. Without a
   * readable context in the carrier the span starts a new trace. The span ends when {@code work}
   * returns or throws; an exception from {@code work} propagates unchanged (the span records it).
   *
   * @param operation the low-cardinality name of what handles the message (a consumer's name),
   *     never {@code null}; never a key, nothing from a body
   * @param carrier the message's headers, never {@code null}: names as the broker delivered them,
   *     and {@code get} ignores their case ({@link String#CASE_INSENSITIVE_ORDER})
   * @param work what to run, never {@code null}
   * @param <T> the result's type
   * @return what {@code work} returned
   */
  <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work);

  /**
   * Records, in the span current on the calling thread, that its attempt answers with what an
   * earlier attempt of the same key stored: a span that links to that attempt's span (a span link
   * in the sense of OpenTelemetry and of Micrometer Tracing's {@code Link}), so that an operator can
   * go from a replay to the trace of the request that did the work. Called while a replay's
   * attempt is observed, with the context kept with the key's record ({@link
   * dev.idem.core.StoredResponse#traceContext()}). The default records nothing.
   *
   * @param operation the low-cardinality operation of the replayed request (its scope's), never
   *     {@code null}; never a key, nothing from a body
   * @param firstAttempt the first attempt's context as it was kept, field names in lower case
   *     ({@value #TRACEPARENT}, {@value #TRACESTATE}), never {@code null}, not empty. Must not throw:
   *     a context that cannot be read (another propagation format, a malformed value) links nothing
   */
  default void linkToFirstAttempt(String operation, Map<String, String> firstAttempt) {}

  /**
   * Runs {@code work}, the resumption of an operation that an earlier attempt began (a multi-step
   * operation taken over by a retry or by the completer), in a span of its own that links to that
   * attempt's span: a child of the span current on the calling thread, or the root of a trace of
   * its own when none is (the completer runs on a schedule). The span ends when {@code work}
   * returns or throws; an exception from {@code work} propagates unchanged. The default just runs
   * {@code work}.
   *
   * @param operation the low-cardinality operation being resumed (its scope's), never {@code null}
   * @param firstAttempt the first attempt's context as it was kept, field names in lower case,
   *     never {@code null}; one that cannot be read links nothing (the span is made all the same)
   * @param work what to run, never {@code null}
   * @param <T> the result's type
   * @return what {@code work} returned
   */
  default <T> T resumeLinked(String operation, Map<String, String> firstAttempt, Supplier<T> work) {
    return work.get();
  }

  /**
   * Opens a span for the delivery of one stored message (an outbox intent that a relay sends), of
   * kind producer, whose parent is the context the message carries (the request's that wrote it),
   * and gives the trace fields to send with the message in place of the carried ones: the
   * consumer's span then becomes the publish span's child, and the request's trace shows when the
   * message left. The default opens nothing and sends the carried fields unchanged.
   *
   * @param operation the low-cardinality name of the delivery, such as {@code kafka orders} (the
   *     transport's kind and the destination), never {@code null}; never a key or a message id
   * @param carrier the message's stored headers, never {@code null}; {@code get} ignores case
   * @return the delivery's span, never {@code null}; to be ended once. Must not throw: a failure
   *     gives a publication that sends the carried fields unchanged
   */
  default Publication publishing(String operation, Map<String, String> carrier) {
    return Publication.unchanged(carrier);
  }

  /**
   * One delivery's span ({@link #publishing}). Used by one thread at a time.
   */
  interface Publication {

    /**
     * @param carrier the message's stored headers, never {@code null}
     * @return a publication that opened no span and sends the carrier's fields as they are
     */
    static Publication unchanged(Map<String, String> carrier) {
      java.util.Objects.requireNonNull(carrier, "carrier");
      return new Publication() {
        @Override
        public Map<String, String> context() {
          return carrier;
        }

        @Override
        public void ended(@Nullable String failure) {}
      };
    }

    /**
     * @return the trace fields to send with the message, names in lower case; they replace the
     *     fields of the same names the message carries, never {@code null}
     */
    Map<String, String> context();

    /**
     * Ends the span. Must not throw.
     *
     * @param failure why the delivery failed (it is retried later, or given up), or {@code null}
     *     when the receiver took it
     */
    void ended(@Nullable String failure);
  }
}
