package dev.idem.webflux;

import dev.idem.testkit.conformance.AnyonceConformance;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * Every anyonce conformance vector (idem-testkit's {@link AnyonceConformance}, the runner and
 * vectors the servlet filter passes) through {@link IdempotencyWebFilter} on a real Reactor Netty
 * server with BlockHound watching its event loops, with the starter's limits; each mode runs it by
 * subclassing, with an engine from {@link #config}. A vector that requires {@code short-ttl} gets a
 * retention of at most 2 s. Each vector has an engine and a server of its own.
 */
abstract class WebFluxConformanceContract {

  @TestFactory
  Stream<DynamicTest> vectors() {
    return AnyonceConformance.tests(this::start);
  }

  /**
   * @param requires the vector's capabilities ({@code short-ttl}: a retention of at most 2 s)
   * @return the filter's configuration on this mode's engine, the routes and limits added by the caller
   */
  protected abstract IdempotencyWebFilterConfig.Builder config(Set<String> requires);

  private AnyonceConformance.Server start(Set<String> requires) {
    IdempotencyWebFilterConfig.Builder config = config(requires);
    for (List<String> route : AnyonceConformance.REQUIRED_ROUTES) {
      config.requireKey(route.get(0), route.get(1));
    }
    config.maxBodyBytes(AnyonceConformance.MAX_BODY_BYTES)
        .maxResponseBytes(AnyonceConformance.MAX_RESPONSE_BYTES)
        .maxRetryAfter(AnyonceConformance.MAX_RETRY_AFTER);
    Fixture fixture = new Fixture();
    TestServer server = new TestServer(config.build(), fixture.routes());
    return new AnyonceConformance.Server() {
      @Override
      public URI uri(String path) {
        return server.uri(path);
      }

      @Override
      public int invocations() {
        return fixture.invocations.get();
      }

      @Override
      public void close() {
        server.close();
      }
    };
  }

  /**
   * The vectors' fixture API ({@link AnyonceConformance} lists it) as WebFlux functional routes,
   * without blocking: {@code /slow} waits on a timer, not a thread.
   */
  static final class Fixture {
    private static final Pattern STATUS = Pattern.compile("/status/([1-5][0-9][0-9])");
    private static final MediaType TEXT = MediaType.parseMediaType("text/plain;charset=UTF-8");

    final AtomicInteger invocations = new AtomicInteger();

    RouterFunction<ServerResponse> routes() {
      return RouterFunctions.route()
          .GET("/counter", req -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON)
              .bodyValue("{\"count\":" + invocations.get() + "}"))
          .POST("/reset", req -> {
            invocations.set(0);
            return ServerResponse.noContent().build();
          })
          .POST("/echo", req -> req.bodyToMono(byte[].class).defaultIfEmpty(new byte[0]).flatMap(body -> {
            invocations.incrementAndGet();
            return ServerResponse.status(201).contentType(TEXT).bodyValue(body);
          }))
          .POST("/status/{code}", this::status)
          .POST("/slow", req -> {
            invocations.incrementAndGet();
            long ms = Long.parseLong(req.queryParam("ms").orElseThrow());
            return Mono.delay(Duration.ofMillis(ms))
                .then(ServerResponse.ok().contentType(TEXT).bodyValue("slept:" + ms));
          })
          .POST("/large", req -> {
            invocations.incrementAndGet();
            byte[] body = new byte[Integer.parseInt(req.queryParam("bytes").orElseThrow())];
            Arrays.fill(body, (byte) 'x');
            return ServerResponse.ok().contentType(MediaType.APPLICATION_OCTET_STREAM).bodyValue(body);
          })
          .route(req -> true, req -> ServerResponse.status(404).contentType(TEXT)
              .bodyValue("no fixture route " + req.method().name() + " " + req.path()))
          .build();
    }

    private Mono<ServerResponse> status(ServerRequest req) {
      Matcher status = STATUS.matcher(req.path());
      if (!status.matches()) {
        return ServerResponse.status(404).contentType(TEXT).bodyValue("no fixture route POST " + req.path());
      }
      invocations.incrementAndGet();
      int code = Integer.parseInt(status.group(1));
      return ServerResponse.status(code).contentType(TEXT).bodyValue(("status:" + code).getBytes(StandardCharsets.UTF_8));
    }
  }
}
