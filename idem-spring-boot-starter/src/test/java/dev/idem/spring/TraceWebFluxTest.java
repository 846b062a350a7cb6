package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testkit.TestDatabase;
import dev.idem.webflux.IdempotencyWebFilter;
import dev.idem.webflux.TransactionalEngine;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.LoopResources;

/**
 * docs/operations.md, "Observations", on WebFlux: the {@code idem <operation>} span of an attempt is
 * a child of the request's HTTP server span, in the request's trace, in both modes (lease on the
 * starter's memory store, transactional on R2DBC with PostgreSQL). Spring WebFlux keeps the
 * request's observation in the Reactor context, not in a thread local, so the attempt's span began a
 * trace of its own, and the trace context kept with the key named that trace instead of the
 * request's; the filter now makes the request's observation current while the attempt starts
 * (Micrometer's context-propagation, which Micrometer Tracing brings). A replay's link still points
 * at the first attempt's span, and nothing stays current on the event loop.
 *
 * <p>Micrometer Tracing's OpenTelemetry bridge and OpenTelemetry's in-memory span exporter ({@link
 * TracePropagationTest.Traced}); a real Reactor Netty server with one event loop, whose {@link
 * HttpHandler} observes each request (as Spring Boot builds it with an observation registry).
 */
class TraceWebFluxTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  private ReactiveWebApplicationContextRunner app(String mode) {
    ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
        .withUserConfiguration(TracePropagationTest.Traced.class)
        .withPropertyValues("idem.principal=shared", "idem.required-key-routes=POST /notes");
    return mode.equals("lease")
        ? runner.withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        : runner.withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.r2dbc())))
            .withPropertyValues("spring.r2dbc.url=" + DB.r2dbcUrl());
  }

  /**
   * POST /notes answers 201; GET /current (not protected) answers what is current on the event loop
   * when its handler runs, the observation and the span: "none none" unless something was left there.
   */
  private static RouterFunction<ServerResponse> routes(ObservationRegistry registry, Tracer tracer) {
    return RouterFunctions.route()
        .POST("/notes", request -> ServerResponse.status(201).bodyValue("noted"))
        .GET("/current", request -> {
          Observation observation = registry.getCurrentObservation();
          Span span = tracer.currentSpan();
          return ServerResponse.ok().bodyValue((observation == null ? "none" : observation.getContext().getName())
              + " " + (span == null ? "none" : span.context().spanId()));
        })
        .build();
  }

  private static HttpResponse<String> send(HttpClient client, int port, HttpRequest.Builder request) throws Exception {
    return client.send(request.uri(URI.create("http://127.0.0.1:" + port + "/notes")).timeout(Duration.ofSeconds(20)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @ParameterizedTest
  @ValueSource(strings = {"lease", "transactional"})
  void theAttemptsSpanIsAChildOfTheHttpServerSpanAndTheReplayLinksToIt(String mode) {
    app(mode).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBeansOfType(TransactionalEngine.class)).as("the mode the test means").hasSize(mode.equals("lease") ? 0 : 1);
      ObservationRegistry registry = ctx.getBean(ObservationRegistry.class);
      HttpHandler handler = WebHttpHandlerBuilder.webHandler(RouterFunctions.toWebHandler(routes(registry, ctx.getBean(Tracer.class))))
          .filter(ctx.getBean(IdempotencyWebFilter.class))
          .observationRegistry(registry)
          .build();
      LoopResources loop = LoopResources.create("traced", 1, 1, true);
      DisposableServer server = HttpServer.create().host("127.0.0.1").port(0).runOn(loop)
          .handle(new ReactorHttpHandlerAdapter(handler)).bindNow(Duration.ofSeconds(10));
      HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      try {
        String key = UUID.randomUUID().toString();
        for (int i = 0; i < 2; i++) { // a create, then its replay
          HttpResponse<String> answer = send(client, server.port(), HttpRequest.newBuilder()
              .header("Content-Type", "application/json").header("Idempotency-Key", key)
              .POST(HttpRequest.BodyPublishers.ofString("{\"text\":\"hi\"}")));
          assertThat(answer.statusCode()).isEqualTo(201);
          assertThat(answer.headers().firstValue("Idempotent-Replayed").isPresent()).isEqualTo(i == 1);
        }
        HttpResponse<String> current = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/current"))
            .timeout(Duration.ofSeconds(20)).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(current.body()).as("nothing stays current on the event loop").isEqualTo("none none");
      } finally {
        server.disposeNow(Duration.ofSeconds(10));
        loop.disposeLater().block(Duration.ofSeconds(10));
      }

      List<SpanData> spans = ctx.getBean(InMemorySpanExporter.class).getFinishedSpanItems();
      // in the order they ended: the two POSTs', then the GET's
      List<SpanData> requests = spans.stream().filter(s -> s.getKind() == SpanKind.SERVER).toList();
      List<SpanData> attempts = spans.stream().filter(s -> s.getName().equals("idem post /notes")).toList();
      assertThat(requests).as("the server spans of the two POSTs and the GET").hasSize(3);
      assertThat(attempts).hasSize(2);
      for (int i = 0; i < 2; i++) {
        SpanData request = requests.get(i);
        SpanData attempt = attempts.get(i);
        assertThat(attempt.getTraceId()).as("the attempt is in its request's trace").isEqualTo(request.getTraceId());
        assertThat(attempt.getParentSpanId()).as("a child of the HTTP server span").isEqualTo(request.getSpanId());
      }
      ReplayTraceLinkTest.assertReplayLinksToTheCreate(spans, attempts.get(0), attempts.get(1));
    });
  }
}
