package dev.idem.spring.tracing;

import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.spring.observation.ObservationIdemListener;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.tracing.Link;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * {@link TraceContextPropagation} over Micrometer Tracing, which the starter configures when the
 * application has a {@link Tracer} and a {@link Propagator} (Spring Boot makes both with a tracing
 * bridge, OpenTelemetry's or Brave's): an outbox intent carries the current span's context in the
 * propagator's headers (W3C {@code traceparent} and {@code tracestate} by default), and an
 * idempotent consumer handles each message in an observation, {@value #NAME}, whose span continues
 * that context (Micrometer's receiver context, which Spring Boot's tracing handlers extract).
 *
 * <ul>
 *   <li>name {@value #NAME}; contextual name (the span's) {@code idem process <consumer>} in lower case (the
 *       messaging conventions' operation {@code process}); the attempt inside it is {@code idem consume};
 *   <li>one low-cardinality key value, {@value #CONSUMER}: the consumer's name; never a key or a
 *       message id, nothing from a body.
 * </ul>
 *
 * <p>A replay's attempt gets a child span, {@code idem replay <operation>} in lower case, that links to the first
 * attempt's span, read from the W3C {@code traceparent} kept with the key's record ({@link
 * #linkToFirstAttempt}); a multi-step operation resumed by a retry or by the completer runs in a
 * span, {@code idem resume <operation>}, linked the same way to the span of the attempt that
 * recorded its input ({@link #resumeLinked}). A context kept in another propagation format links
 * nothing. The outbox relay sends each message in a span of kind producer, {@code idem publish
 * <kind> <destination>}, a child of the request's context stored with the intent, whose context
 * the message then carries ({@link #publishing}): the consumer's span is its child.
 *
 * <p>Thread-safe; one instance serves every request and message.
 */
final class MicrometerTracePropagation implements TraceContextPropagation {

  /** The consumer observation's name: {@value}. */
  static final String NAME = "idem.process";

  /** The key of the consumer's name: {@value}. */
  static final String CONSUMER = "idem.consumer";

  private final Tracer tracer;
  private final Propagator propagator;
  private final ObservationRegistry registry;

  MicrometerTracePropagation(Tracer tracer, Propagator propagator, ObservationRegistry registry) {
    this.tracer = Objects.requireNonNull(tracer, "tracer");
    this.propagator = Objects.requireNonNull(propagator, "propagator");
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  @Override
  public Map<String, String> currentContext() {
    try {
      TraceContext context = tracer.currentTraceContext().context();
      if (context == null) {
        return Map.of(); // no span: an unsampled one is carried too, so that the consumer's is not sampled either
      }
      Map<String, String> headers = new LinkedHashMap<>();
      propagator.inject(context, headers, (carrier, name, value) -> {
        if (carrier != null) {
          carrier.put(name.toLowerCase(Locale.ROOT), value);
        }
      });
      return headers;
    } catch (RuntimeException e) {
      return Map.of(); // tracing never fails a request
    }
  }

  @Override
  public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
    ReceiverContext<Map<String, String>> context =
        new ReceiverContext<>((headers, name) -> headers.get(name.toLowerCase(Locale.ROOT)));
    context.setCarrier(carrier);
    return Observation.createNotStarted(NAME, () -> context, registry)
        .contextualName(ObservationIdemListener.spanName("idem process ", operation))
        .lowCardinalityKeyValue(CONSUMER, operation)
        .observe(work);
  }

  @Override
  public void linkToFirstAttempt(String operation, Map<String, String> firstAttempt) {
    try {
      TraceContext first = fromTraceparent(firstAttempt.get(TRACEPARENT));
      TraceContext current = tracer.currentTraceContext().context();
      if (first == null || current == null) {
        return; // nothing to link to, or no trace of this attempt to put the link in
      }
      Span span = tracer.spanBuilder()
          .setParent(current)
          .name(ObservationIdemListener.spanName("idem replay ", operation))
          .tag(REPLAY_OPERATION, operation)
          .addLink(new Link(first))
          .start();
      span.end();
    } catch (RuntimeException e) {
      // tracing never fails a request
    }
  }

  @Override
  public <T> T resumeLinked(String operation, Map<String, String> firstAttempt, Supplier<T> work) {
    Span span;
    try {
      TraceContext first = fromTraceparent(firstAttempt.get(TRACEPARENT));
      TraceContext current = tracer.currentTraceContext().context();
      Span.Builder builder = tracer.spanBuilder().name(ObservationIdemListener.spanName("idem resume ", operation))
          .tag(REPLAY_OPERATION, operation);
      builder = current == null ? builder.setNoParent() : builder.setParent(current);
      span = (first == null ? builder : builder.addLink(new Link(first))).start();
    } catch (RuntimeException e) {
      return work.get(); // tracing never fails an operation
    }
    try (Tracer.SpanInScope ignored = tracer.withSpan(span)) {
      return work.get();
    } catch (RuntimeException | Error e) {
      span.error(e);
      throw e;
    } finally {
      span.end();
    }
  }

  @Override
  public Publication publishing(String operation, Map<String, String> carrier) {
    try {
      if (propagator.fields().stream().noneMatch(carrier::containsKey)) {
        return Publication.unchanged(carrier); // stored without a trace: no span of a trace of its own
      }
      Span span = propagator.extract(carrier, (headers, name) -> headers.get(name))
          .kind(Span.Kind.PRODUCER)
          .name(ObservationIdemListener.spanName("idem publish ", operation))
          .tag(DESTINATION, operation)
          .start();
      Map<String, String> fields = new LinkedHashMap<>();
      try {
        propagator.inject(span.context(), fields, (headers, name, value) -> {
          if (headers != null) {
            headers.put(name.toLowerCase(Locale.ROOT), value);
          }
        });
      } catch (RuntimeException e) {
        span.end(); // a span that no message carries is ended here, not left open
        throw e;
      }
      return new Publication() {
        @Override
        public Map<String, String> context() {
          return fields;
        }

        @Override
        public void ended(@Nullable String failure) {
          try {
            span.tag(DELIVERY, failure == null ? "delivered" : "failed");
            if (failure != null) {
              span.error(new IllegalStateException("delivery failed: " + failure));
            }
          } finally {
            span.end();
          }
        }
      };
    } catch (RuntimeException e) {
      return Publication.unchanged(carrier); // tracing never fails a delivery
    }
  }

  /** The publish span's tag of the transport and destination: {@value}. */
  static final String DESTINATION = "idem.destination";

  /** The publish span's tag of the delivery's end, {@code delivered} or {@code failed}: {@value}. */
  static final String DELIVERY = "idem.delivery";

  /** The tag of the replay's and the resume's span: the operation, {@value}. */
  static final String REPLAY_OPERATION = "idem.operation";

  /**
   * A W3C {@code traceparent} value (Trace Context Level 1, section 3.2: {@code version "-"
   * trace-id "-" parent-id "-" trace-flags}, lower-case hex, all-zero ids invalid).
   *
   * @return the context it names, or {@code null} if {@code value} is absent or malformed
   */
  @Nullable TraceContext fromTraceparent(@Nullable String value) {
    if (value == null) {
      return null;
    }
    String[] parts = value.trim().split("-", -1);
    if (parts.length < 4 || !hex(parts[0], 2) || parts[0].equals("ff") || (parts[0].equals("00") && parts.length != 4)
        || !hex(parts[1], 32) || !hex(parts[2], 16) || !hex(parts[3], 2)
        || parts[1].chars().allMatch(c -> c == '0') || parts[2].chars().allMatch(c -> c == '0')) {
      return null;
    }
    boolean sampled = (Integer.parseInt(parts[3], 16) & 1) == 1;
    return tracer.traceContextBuilder().traceId(parts[1]).spanId(parts[2]).sampled(sampled).build();
  }

  private static boolean hex(String s, int length) {
    if (s.length() != length) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      char c = s.charAt(i);
      if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
        return false;
      }
    }
    return true;
  }
}
