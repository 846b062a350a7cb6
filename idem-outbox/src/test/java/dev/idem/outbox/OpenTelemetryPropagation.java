package dev.idem.outbox;

import dev.idem.core.spi.TraceContextPropagation;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@link TraceContextPropagation} over the OpenTelemetry SDK with its in-memory span exporter, as
 * an application without Spring would write it: W3C Trace Context injected from the current
 * context, extracted into a consumer span; a relay's delivery in a producer span.
 */
final class OpenTelemetryPropagation implements TraceContextPropagation, AutoCloseable {

  private static final TextMapGetter<Map<String, String>> GETTER = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(Map<String, String> carrier) {
      return carrier.keySet();
    }

    @Override
    public String get(Map<String, String> carrier, String key) {
      return carrier == null ? null : carrier.get(key);
    }
  };

  final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private final SdkTracerProvider provider =
      SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
  final Tracer tracer = provider.get("idem-broker-contract");
  private final W3CTraceContextPropagator propagator = W3CTraceContextPropagator.getInstance();

  @Override
  public Map<String, String> currentContext() {
    Map<String, String> headers = new LinkedHashMap<>();
    propagator.inject(Context.current(), headers, Map::put);
    return headers;
  }

  @Override
  public <T> T continueTrace(String operation, Map<String, String> carrier, Supplier<T> work) {
    Context parent = propagator.extract(Context.root(), carrier, GETTER);
    Span span = tracer.spanBuilder("consume " + operation).setParent(parent).setSpanKind(SpanKind.CONSUMER).startSpan();
    try (Scope ignored = span.makeCurrent()) {
      return work.get();
    } catch (RuntimeException e) {
      span.recordException(e);
      span.setStatus(StatusCode.ERROR);
      throw e;
    } finally {
      span.end();
    }
  }

  @Override
  public Publication publishing(String operation, Map<String, String> carrier) {
    Context parent = propagator.extract(Context.root(), carrier, GETTER);
    Span span = tracer.spanBuilder("publish " + operation).setParent(parent).setSpanKind(SpanKind.PRODUCER).startSpan();
    Map<String, String> fields = new LinkedHashMap<>();
    propagator.inject(parent.with(span), fields, Map::put);
    return new Publication() {
      @Override
      public Map<String, String> context() {
        return fields;
      }

      @Override
      public void ended(String failure) {
        if (failure != null) {
          span.setStatus(StatusCode.ERROR, failure);
        }
        span.end();
      }
    };
  }

  List<SpanData> finished() {
    return exporter.getFinishedSpanItems();
  }

  @Override
  public void close() {
    provider.close();
  }
}
