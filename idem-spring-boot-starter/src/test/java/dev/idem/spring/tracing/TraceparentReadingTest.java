package dev.idem.spring.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The first attempt's {@code traceparent}, as kept with a key's record, is read by the W3C Trace
 * Context rules (Level 1, section 3.2) before a replay links to it: a value that breaks them links
 * nothing and never fails the replay.
 */
class TraceparentReadingTest {

  private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
      .setTracerProvider(SdkTracerProvider.builder().build())
      .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
      .build();
  private final OtelTracer tracer = new OtelTracer(otel.getTracer("t"), new OtelCurrentTraceContext(), event -> {});
  private final MicrometerTracePropagation tracing = new MicrometerTracePropagation(
      tracer, new OtelPropagator(otel.getPropagators(), otel.getTracer("t")), ObservationRegistry.create());

  @Test
  void aW3cTraceparentNamesItsTraceSpanAndSampling() {
    TraceContext c = tracing.fromTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assertThat(c).isNotNull();
    assertThat(c.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(c.spanId()).isEqualTo("00f067aa0ba902b7");
    assertThat(c.sampled()).isTrue();
    assertThat(tracing.fromTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").sampled()).isFalse();
    // a later version may add fields after the flags; its first four are read as version 00's
    assertThat(tracing.fromTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-what")).isNotNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "", "00", "garbage", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz"})
  void aMalformedTraceparentIsNotRead(String value) {
    assertThat(tracing.fromTraceparent(value)).isNull();
  }

  @Test
  void aReplayWithoutACurrentSpanOrWithAnUnreadableContextLinksNothingAndDoesNotThrow() {
    tracing.linkToFirstAttempt("POST /notes", Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    tracing.linkToFirstAttempt("POST /notes", Map.of("b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1"));
    assertThat(tracer.currentSpan()).isNull();
  }
}
