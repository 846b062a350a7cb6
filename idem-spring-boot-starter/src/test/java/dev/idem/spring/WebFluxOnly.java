package dev.idem.spring;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.util.ClassUtils;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A WebFlux application as an application on spring-boot-starter-webflux has it: the tests named
 * {@code *WebFluxOnlyTest} run in a surefire execution of their own whose class path has neither the
 * Servlet API (nor Tomcat, which bundles it) nor Spring MVC (see the module's POM), so that the
 * starter's servlet side (which needs {@code jakarta.servlet.Filter}) is absent, as it is there.
 * The application's {@link HttpHandler} (Spring Boot's, with {@code spring.webflux.base-path}
 * applied) is served by Reactor Netty on a random port of 127.0.0.1 and called over real HTTP; on
 * both Spring Boot lines, without depending on either line's embedded server module.
 *
 * <p>Not thread-safe; one per test.
 */
public final class WebFluxOnly implements AutoCloseable {

  private final DisposableServer server;
  private final HttpClient client = HttpClient.newHttpClient();

  /**
   * @param handler the application's HTTP handler, never {@code null}
   * @throws IllegalStateException if the Servlet API is on the class path: the test would run
   *     beside the servlet side, which a WebFlux application does not have
   */
  public WebFluxOnly(HttpHandler handler) {
    if (ClassUtils.isPresent("jakarta.servlet.Filter", WebFluxOnly.class.getClassLoader())) {
      throw new IllegalStateException("the Servlet API is on this class path: run the *WebFluxOnlyTest classes in the"
          + " webflux-only surefire execution, whose class path is that of a WebFlux application");
    }
    server = HttpServer.create().host("127.0.0.1").port(0).handle(new ReactorHttpHandlerAdapter(handler))
        .bindNow(Duration.ofSeconds(10));
  }

  /** @return a GET of {@code path} (the base path included), with a 30 s timeout */
  public HttpResponse<String> get(String path) throws Exception {
    return send(HttpRequest.newBuilder(uri(path)).GET());
  }

  /** @return a POST of {@code {}} as JSON to {@code path}, without a key, with a 30 s timeout */
  public HttpResponse<String> post(String path) throws Exception {
    return send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{}")));
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.port() + path);
  }

  private HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
    return client.send(b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Override
  public void close() {
    server.disposeNow(Duration.ofSeconds(10));
  }
}
