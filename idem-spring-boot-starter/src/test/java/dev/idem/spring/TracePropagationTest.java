package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.outbox.Intent;
import dev.idem.outbox.IntentWriter;
import dev.idem.outbox.Outbox;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.micrometer.tracing.propagation.Propagator;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.opentelemetry.sdk.trace.samplers.SamplingResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * docs/operations.md, "Traces across the outbox": with Micrometer Tracing (here its OpenTelemetry
 * bridge and OpenTelemetry's in-memory span exporter) the starter's outbox stores the current
 * span's W3C context with each intent, and its consumers handle a message in a span that continues
 * the context the message carries. The broker contract (idem-outbox) shows the headers travel
 * through RabbitMQ, JetStream and Kafka; this shows the starter wires both ends.
 */
class TracePropagationTest {

  @TempDir Path dir;

  /** What Spring Boot's tracing auto-configuration makes, built by hand for both Boot lines. */
  @Configuration(proxyBeanMethods = false)
  static class Traced {
    @Bean
    InMemorySpanExporter spans() {
      return InMemorySpanExporter.create();
    }

    @Bean(destroyMethod = "close")
    OpenTelemetrySdk openTelemetry(InMemorySpanExporter spans, Environment env) {
      // test.sampling=consumers-only: a root span is sampled only when it is a consumer's (a request is not)
      Sampler sampler = env.getProperty("test.sampling", "all").equals("consumers-only")
          ? Sampler.parentBased(new ConsumerRootsOnly()) : Sampler.alwaysOn();
      return OpenTelemetrySdk.builder()
          .setTracerProvider(SdkTracerProvider.builder().setSampler(sampler)
              .addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
          .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
          .build();
    }

    @Bean
    OtelTracer tracer(OpenTelemetrySdk otel) {
      return new OtelTracer(otel.getTracer("idem-test"), new OtelCurrentTraceContext(), event -> {});
    }

    @Bean
    OtelPropagator propagator(OpenTelemetrySdk otel) {
      return new OtelPropagator(otel.getPropagators(), otel.getTracer("idem-test"));
    }

    @Bean
    ObservationRegistry observationRegistry(Tracer tracer, Propagator propagator) {
      ObservationRegistry registry = ObservationRegistry.create();
      registry.observationConfig().observationHandler(new ObservationHandler.FirstMatchingCompositeObservationHandler(
          new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
          new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
          new DefaultTracingObservationHandler(tracer)));
      return registry;
    }
  }

  /** Samples a root span only when it is a consumer's: a sampling decision that differs by service. */
  static final class ConsumerRootsOnly implements Sampler {
    @Override
    public SamplingResult shouldSample(Context parent, String traceId, String name, SpanKind kind, Attributes attributes,
        List<LinkData> links) {
      return kind == SpanKind.CONSUMER ? SamplingResult.recordAndSample() : SamplingResult.drop();
    }

    @Override
    public String getDescription() {
      return "ConsumerRootsOnly";
    }
  }

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(Traced.class)
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4");
  }

  @Test
  void anIntentWrittenInASpanCarriesThatSpansContext() {
    app().run(ctx -> {
      assertThat(ctx).hasSingleBean(TraceContextPropagation.class);
      Outbox outbox = ctx.getBean(Outbox.class);
      Tracer tracer = ctx.getBean(Tracer.class);
      IdempotentRequest request = new IdempotentRequest(Scope.of("shop", "POST /orders"), IdempotencyKey.of("order-1"),
          Fingerprint.ofBytes(new byte[] {1}));
      Span span = tracer.nextSpan().name("POST /orders").start();
      try (Connection c = ctx.getBean(DataSource.class).getConnection()) {
        c.setAutoCommit(false);
        try (Tracer.SpanInScope ignored = tracer.withSpan(span); IntentWriter out = outbox.writer(c, request)) {
          out.add(Intent.kafka("orders", "{}".getBytes(StandardCharsets.UTF_8)));
        } finally {
          span.end();
        }
        c.commit();
        assertThat(outbox.intentsOf(c, request)).singleElement().satisfies(e -> assertThat(e.intent().headers())
            .anySatisfy(h -> {
              // version 00, the span's trace and span ids, then the flags (sampled; newer SDKs add the random-id flag)
              assertThat(h.getKey()).isEqualTo("traceparent");
              assertThat(h.getValue()).startsWith("00-" + span.context().traceId() + "-" + span.context().spanId() + "-");
            }));
      }
    });
  }

  @Test
  void aConsumerHandlesAMessageInTheTraceItCarries() {
    app().run(ctx -> {
      var consumer = ctx.getBean(IdemRabbitListeners.class)
          .transactional("billing", "unused", (connection, message) -> {}, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "dlq"))
          .consumer();
      String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      String parent = "00f067aa0ba902b7";
      InboundMessage message = new InboundMessage("m-1", Map.of("traceparent", "00-" + traceId + "-" + parent + "-01"),
          "pay".getBytes(StandardCharsets.UTF_8), 1, "test");
      assertThat(consumer.process(message).action()).isEqualTo(Verdict.Action.ACK);

      List<SpanData> spans = ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems();
      assertThat(spans).extracting(SpanData::getName).contains("idem process billing");
      SpanData consume = spans.stream().filter(s -> s.getName().equals("idem process billing")).findFirst().orElseThrow();
      assertThat(consume.getTraceId()).isEqualTo(traceId);
      assertThat(consume.getParentSpanId()).isEqualTo(parent);
      assertThat(consume.getKind()).isEqualTo(SpanKind.CONSUMER);
      // the attempt's own observation is the consumer span's child: one trace from request to handler
      assertThat(spans).filteredOn(s -> s.getName().equals("idem consume")).singleElement()
          .satisfies(s -> {
            assertThat(s.getTraceId()).isEqualTo(traceId);
            assertThat(s.getParentSpanId()).isEqualTo(consume.getSpanId());
          });
    });
  }

  /**
   * A request that is not sampled still gives its context (flags 00) to the intent, so that the
   * consumer's span is not sampled either: without it the consumer's span would be the root of a
   * trace of its own, sampled by the consumer's own decision and cut off from its request.
   */
  @Test
  void anUnsampledRequestsMessageIsNotHandledInATraceOfItsOwn() {
    app().withPropertyValues("test.sampling=consumers-only").run(ctx -> {
      Outbox outbox = ctx.getBean(Outbox.class);
      Tracer tracer = ctx.getBean(Tracer.class);
      IdempotentRequest request = new IdempotentRequest(Scope.of("shop", "POST /orders"), IdempotencyKey.of("order-2"),
          Fingerprint.ofBytes(new byte[] {2}));
      Span span = tracer.nextSpan().name("POST /orders").start();
      assertThat(span.context().sampled()).isFalse();
      List<Map.Entry<String, String>> headers;
      try (Connection c = ctx.getBean(DataSource.class).getConnection()) {
        c.setAutoCommit(false);
        try (Tracer.SpanInScope ignored = tracer.withSpan(span); IntentWriter out = outbox.writer(c, request)) {
          out.add(Intent.kafka("orders", "{}".getBytes(StandardCharsets.UTF_8)));
        } finally {
          span.end();
        }
        c.commit();
        headers = outbox.intentsOf(c, request).get(0).intent().headers();
      }
      var consumer = ctx.getBean(IdemRabbitListeners.class)
          .transactional("billing", "unused", (connection, message) -> {}, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "dlq"))
          .consumer();
      Map<String, String> delivered = new java.util.HashMap<>();
      headers.forEach(h -> delivered.put(h.getKey(), h.getValue()));
      assertThat(consumer.process(new InboundMessage("m-2", delivered, "pay".getBytes(StandardCharsets.UTF_8), 1, "test")).action())
          .isEqualTo(Verdict.Action.ACK);
      // no span of the consumer's: not a trace root sampled on its own
      assertThat(ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems()).extracting(SpanData::getName).isEmpty();

      // the span's trace and span ids, then flags without the sampled bit (newer SDKs may set the random-id bit)
      assertThat(headers).filteredOn(h -> h.getKey().equals("traceparent")).singleElement().satisfies(h -> {
        assertThat(h.getValue()).startsWith("00-" + span.context().traceId() + "-" + span.context().spanId() + "-");
        assertThat(Integer.parseInt(h.getValue().substring(h.getValue().lastIndexOf('-') + 1), 16) & 1).isZero();
      });
    });
  }

  /** Without its own observations (idem.observations.enabled=false) the starter carries no context; a bean of the application's replaces its own. */
  @Test
  void theTracingIsOffWithIdemsObservationsAndAnApplicationsOwnPropagationIsUsed() {
    app().withPropertyValues("idem.observations.enabled=false").run(ctx ->
        assertThat(ctx.getBean(TraceContextPropagation.class)).isSameAs(TraceContextPropagation.NONE));
    TraceContextPropagation own = new TraceContextPropagation() {
      @Override
      public Map<String, String> currentContext() {
        return Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
      }

      @Override
      public <T> T continueTrace(String operation, Map<String, String> carrier, java.util.function.Supplier<T> work) {
        return work.get();
      }
    };
    app().withBean("ownPropagation", TraceContextPropagation.class, () -> own).run(ctx -> {
      assertThat(ctx).getBean(TraceContextPropagation.class).isSameAs(own);
      IdempotentRequest request = new IdempotentRequest(Scope.of("shop", "POST /orders"), IdempotencyKey.of("order-3"),
          Fingerprint.ofBytes(new byte[] {3}));
      Outbox outbox = ctx.getBean(Outbox.class);
      try (Connection c = ctx.getBean(DataSource.class).getConnection()) {
        c.setAutoCommit(false);
        try (IntentWriter out = outbox.writer(c, request)) {
          out.add(Intent.kafka("orders", "{}".getBytes(StandardCharsets.UTF_8)));
        }
        c.commit();
        assertThat(outbox.intentsOf(c, request)).singleElement().satisfies(e -> assertThat(e.intent().headers())
            .containsExactly(Map.entry("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")));
      }
    });
  }
}
