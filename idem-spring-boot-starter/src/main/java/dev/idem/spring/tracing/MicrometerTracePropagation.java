package dev.idem.spring.tracing;

import dev.idem.core.spi.TraceContextPropagation;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * {@link TraceContextPropagation} over Micrometer Tracing, which the starter configures when the
 * application has a {@link Tracer} and a {@link Propagator} (Spring Boot makes both with a tracing
 * bridge, OpenTelemetry's or Brave's): an outbox intent carries the current span's context in the
 * propagator's headers (W3C {@code traceparent} and {@code tracestate} by default), and an
 * idempotent consumer handles each message in an observation, {@value #NAME}, whose span continues
 * that context (Micrometer's receiver context, which Spring Boot's tracing handlers extract).
 *
 * <ul>
 *   <li>name {@value #NAME}; contextual name (the span's) {@code idem process <consumer>} (the
 *       messaging conventions' operation {@code process}); the attempt inside it is {@code idem consume};
 *   <li>one low-cardinality key value, {@value #CONSUMER}: the consumer's name; never a key or a
 *       message id, nothing from a body.
 * </ul>
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
        .contextualName("idem process " + operation)
        .lowCardinalityKeyValue(CONSUMER, operation)
        .observe(work);
  }
}
