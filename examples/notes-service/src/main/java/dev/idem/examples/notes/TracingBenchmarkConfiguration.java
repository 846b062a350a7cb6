package dev.idem.examples.notes;

import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.micrometer.tracing.propagation.Propagator;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * <b>Benchmark only, off by default</b> ({@code notes.benchmark.tracing=true} turns it on): what
 * Spring Boot's tracing auto-configuration makes with the OpenTelemetry bridge (an {@link
 * ObservationRegistry} whose spans go to an OpenTelemetry SDK, every trace sampled, a batch span
 * processor), with an exporter that counts the spans and drops them instead of sending them. The
 * benchmark of Idem's observations ({@code ObservationLoad} in idem-benchmarks) runs the service
 * with it and {@code idem.observations.enabled} on and off, so the difference is the cost of
 * Idem's observations, spans and kept trace context alone.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "notes.benchmark.tracing", havingValue = "true")
class TracingBenchmarkConfiguration {

  /** Counts the spans it is handed and keeps none; thread-safe. */
  static final class CountingExporter implements SpanExporter {
    final LongAdder spans = new LongAdder();

    @Override
    public CompletableResultCode export(Collection<SpanData> batch) {
      spans.add(batch.size());
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      // the benchmark's check that the spans were made at all
      LoggerFactory.getLogger(TracingBenchmarkConfiguration.class).info("notes benchmark tracing: {} spans exported and dropped", spans.sum());
      return CompletableResultCode.ofSuccess();
    }
  }

  @Bean(destroyMethod = "close")
  OpenTelemetrySdk benchmarkOpenTelemetry() {
    return OpenTelemetrySdk.builder()
        .setTracerProvider(SdkTracerProvider.builder()
            .addSpanProcessor(BatchSpanProcessor.builder(new CountingExporter()).build()).build())
        .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
        .build();
  }

  @Bean
  OtelTracer benchmarkTracer(OpenTelemetrySdk otel) {
    return new OtelTracer(otel.getTracer("notes-benchmark"), new OtelCurrentTraceContext(), event -> {});
  }

  @Bean
  OtelPropagator benchmarkPropagator(OpenTelemetrySdk otel) {
    return new OtelPropagator(otel.getPropagators(), otel.getTracer("notes-benchmark"));
  }

  @Bean
  ObservationRegistry benchmarkObservationRegistry(Tracer tracer, Propagator propagator) {
    ObservationRegistry registry = ObservationRegistry.create();
    registry.observationConfig().observationHandler(new DefaultTracingObservationHandler(tracer));
    return registry;
  }
}
