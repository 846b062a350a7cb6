package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandlerCollection;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a key's scope and a 409's {@code Retry-After} are made of: two applications (context paths)
 * on one store, and the hint of a duplicate while the first attempt runs.
 */
class IdempotencyFilterScopeTest {

  private Server server;
  private int port;
  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  /** Answers 201 with the application's name and a per-application counter; /slow waits for a latch. */
  static final class Named extends HttpServlet {
    final String name;
    final AtomicInteger calls = new AtomicInteger();
    volatile CountDownLatch started = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    Named(String name) {
      this.name = name;
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
      int n = calls.incrementAndGet();
      req.getInputStream().readAllBytes();
      if ("/slow".equals(req.getServletPath() + (req.getPathInfo() == null ? "" : req.getPathInfo()))) {
        started.countDown();
        try {
          release.await(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      res.setStatus(201);
      res.setContentType("text/plain");
      res.getOutputStream().write((name + " " + n).getBytes(StandardCharsets.UTF_8));
    }
  }

  private ServletContextHandler context(String path, IdempotencyFilterConfig config, HttpServlet servlet) {
    ServletContextHandler context = new ServletContextHandler(path);
    context.addFilter(new FilterHolder(new IdempotencyFilter(config)), "/*", EnumSet.of(DispatcherType.REQUEST));
    context.addServlet(new ServletHolder(servlet), "/*");
    return context;
  }

  private void start(ServletContextHandler... contexts) throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    server.setHandler(new ContextHandlerCollection(contexts));
    server.start();
    port = connector.getLocalPort();
  }

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.stop();
    }
  }

  private HttpResponse<String> post(String path, String key) throws Exception {
    return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(20)).header("Idempotency-Key", key)
        .POST(BodyPublishers.ofString("same body")).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void twoApplicationsOnOneStoreUnderDifferentContextPathsNeverShareAKey() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    Named shop = new Named("shop");
    Named admin = new Named("admin");
    start(context("/shop", IdempotencyFilterConfig.builder(store).required("POST", "/notes").build(), shop),
        context("/admin", IdempotencyFilterConfig.builder(store).required("POST", "/notes").build(), admin));

    HttpResponse<String> first = post("/shop/notes", "k-ctx");
    HttpResponse<String> other = post("/admin/notes", "k-ctx");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("shop 1");
    assertThat(other.statusCode()).isEqualTo(201);
    assertThat(other.body()).as("the other application runs its own operation, not a replay of the first").isEqualTo("admin 1");
    assertThat(other.headers().firstValue(IdempotencyFilter.REPLAYED_HEADER)).isEmpty();
    assertThat(post("/admin/notes", "k-ctx").body()).isEqualTo("admin 1");
    assertThat(shop.calls.get()).isEqualTo(1);
    assertThat(admin.calls.get()).isEqualTo(1);
  }

  @Test
  void leaseModeInProgressAnswersRetryAfterOfOneSecondNotTheWholeLease() throws Exception {
    Named app = new Named("app");
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).lease(Duration.ofSeconds(30)).build();
    start(context("/", IdempotencyFilterConfig.builder(engine).required("POST", "/slow").build(), app));
    CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> {
      try {
        return post("/slow", "busy");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(app.started.await(10, TimeUnit.SECONDS)).isTrue();

    HttpResponse<String> duplicate = post("/slow", "busy");

    assertThat(duplicate.statusCode()).isEqualTo(409);
    assertThat(duplicate.headers().firstValue("Retry-After")).as("not the 30 s left on the lease").hasValue("1");
    app.release.countDown();
    assertThat(first.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
  }

  @Test
  void retryAfterIsTheRestOfTheLeaseBoundedByTheCap() throws Exception {
    Named app = new Named("app");
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).lease(Duration.ofSeconds(30)).build();
    start(context("/", IdempotencyFilterConfig.builder(engine).required("POST", "/slow").maxRetryAfter(Duration.ofSeconds(10)).build(), app));
    CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> {
      try {
        return post("/slow", "busy-capped");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(app.started.await(10, TimeUnit.SECONDS)).isTrue();

    assertThat(post("/slow", "busy-capped").headers().firstValue("Retry-After")).hasValue("10");
    app.release.countDown();
    assertThat(first.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
  }

  @Test
  void theRetryAfterHintIsWholeSecondsBetweenOneAndTheCap() {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).maxRetryAfter(Duration.ofSeconds(5)).build();
    assertThat(config.retryAfterSeconds(Duration.ZERO)).isEqualTo(1);
    assertThat(config.retryAfterSeconds(Duration.ofMillis(-3))).isEqualTo(1);
    assertThat(config.retryAfterSeconds(null)).isEqualTo(1);
    assertThat(config.retryAfterSeconds(Duration.ofMillis(1))).isEqualTo(1);
    assertThat(config.retryAfterSeconds(Duration.ofMillis(2001))).isEqualTo(3);
    assertThat(config.retryAfterSeconds(Duration.ofSeconds(4))).isEqualTo(4);
    assertThat(config.retryAfterSeconds(Duration.ofSeconds(30))).isEqualTo(5);
    assertThat(config.retryAfterSeconds(Duration.ofSeconds(Long.MAX_VALUE))).isEqualTo(5);
    assertThat(IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).build().retryAfterSeconds(Duration.ofSeconds(30))).isEqualTo(1);
  }

  @Test
  void aRetryAfterCapThatIsNotWholeSecondsFromOneToAnHourIsRefused() {
    IdempotencyFilterConfig.Builder b = IdempotencyFilterConfig.builder(new InMemoryLeaseStore());
    for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofMillis(500), Duration.ofMillis(1500), Duration.ofSeconds(3601)}) {
      assertThatThrownBy(() -> b.maxRetryAfter(bad)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxRetryAfter");
    }
    assertThatThrownBy(() -> b.maxRetryAfter(null)).isInstanceOf(NullPointerException.class);
    assertThat(b.maxRetryAfter(Duration.ofHours(1)).build().maxRetryAfter()).isEqualTo(Duration.ofHours(1));
  }
}
