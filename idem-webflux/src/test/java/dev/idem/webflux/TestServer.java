package dev.idem.webflux;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.http.HttpStatus;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.WebFilter;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A real Reactor Netty server on a free port of 127.0.0.1 with the filter in front of functional
 * routes, and a JDK HTTP client: requests cross a real socket, and the handlers and the filter run
 * on Reactor Netty's event loops, where BlockHound (installed for the whole test run by its JUnit
 * Platform integration) turns any blocking call into an error.
 *
 * <p>Errors that reach WebFlux's error handling are recorded ({@link #errors()}) and answered 500
 * without logging, since a log line written to the console from an event loop is itself blocking;
 * after the answer was committed, the error goes on to the server, which aborts the answer.
 */
final class TestServer implements AutoCloseable {

  private final DisposableServer server;
  private final List<Throwable> errors = new CopyOnWriteArrayList<>();
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  TestServer(IdempotencyWebFilterConfig config, RouterFunction<ServerResponse> routes) {
    this(new IdempotencyWebFilter(config), routes);
  }

  TestServer(WebFilter filter, RouterFunction<ServerResponse> routes) {
    HandlerStrategies strategies = HandlerStrategies.builder()
        .webFilter(filter)
        .exceptionHandler((exchange, error) -> {
          errors.add(error);
          if (exchange.getResponse().isCommitted()) {
            return Mono.error(error); // as WebFlux's own handling: the server aborts an answer already under way
          }
          exchange.getResponse().setStatusCode(HttpStatus.INTERNAL_SERVER_ERROR);
          return exchange.getResponse().setComplete();
        })
        .build();
    HttpHandler handler = RouterFunctions.toHttpHandler(routes, strategies);
    server = HttpServer.create().host("127.0.0.1").port(0).handle(new ReactorHttpHandlerAdapter(handler)).bindNow(Duration.ofSeconds(10));
  }

  /** @return what reached WebFlux's error handling, in order */
  List<Throwable> errors() {
    return errors;
  }

  /** @return a POST to {@code path} with a JSON body and, unless {@code null}, the key field */
  HttpRequest.Builder post(String path, String json, String key) {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(path))
        .timeout(Duration.ofSeconds(20))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    return key == null ? b : b.header("Idempotency-Key", key);
  }

  HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
    return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  HttpClient client() {
    return client;
  }

  URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.port() + path);
  }

  @Override
  public void close() {
    server.disposeNow(Duration.ofSeconds(10));
  }
}
