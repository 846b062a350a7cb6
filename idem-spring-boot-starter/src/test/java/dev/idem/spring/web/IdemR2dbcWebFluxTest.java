package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.r2dbc.R2dbcLeaseStore;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.testkit.TestDatabase;
import dev.idem.webflux.IdempotencyWebFilter;
import io.r2dbc.spi.ConnectionFactory;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A WebFlux application on Reactor Netty (a random port) with Spring Boot's R2DBC ConnectionFactory
 * on PostgreSQL and idem-r2dbc: {@code idem.mode=lease} keeps the keys in the R2DBC key table, and
 * the handler, which inserts a row with {@link DatabaseClient}, runs once per key.
 */
class IdemR2dbcWebFluxTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  private final AtomicInteger runs = new AtomicInteger();

  @BeforeAll
  static void ordersTable() throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, idem_key TEXT, body TEXT NOT NULL)");
    }
  }

  /** The R2DBC URL of the test's database, from its JDBC URL {@code jdbc:postgresql://host:port/name?user=...}. */
  private static String[] r2dbcProperties() {
    String url = DB.url();
    int query = url.indexOf('?');
    String base = url.substring("jdbc:".length(), query < 0 ? url.length() : query);
    String user = query < 0 ? "postgres" : url.substring(url.indexOf("user=") + "user=".length()).split("&")[0];
    return new String[] {"spring.r2dbc.url=r2dbc:" + base, "spring.r2dbc.username=" + user};
  }

  private ReactiveWebApplicationContextRunner app() {
    return new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.r2dbc())))
        .withPropertyValues(r2dbcProperties())
        .withPropertyValues("idem.principal=shared", "idem.required-key-routes=POST /orders");
  }

  /** POST /orders: waits a little (so duplicates overlap), then inserts the body as a row. */
  private RouterFunction<ServerResponse> routes(ConnectionFactory factory) {
    DatabaseClient db = DatabaseClient.create(factory);
    return RouterFunctions.route()
        .POST("/orders", request -> request.bodyToMono(String.class)
            .delayElement(Duration.ofMillis(200))
            .flatMap(body -> db.sql("INSERT INTO orders (idem_key, body) VALUES (:key, :body)")
                .bind("key", request.headers().firstHeader("Idempotency-Key"))
                .bind("body", body)
                .fetch().rowsUpdated())
            .flatMap(rows -> ServerResponse.status(201).bodyValue("order " + runs.incrementAndGet())))
        .build();
  }

  /** Runs {@code test} against the application served by Reactor Netty on a random port. */
  private void served(ReactiveWebApplicationContextRunner runner, ServedTest test) {
    runner.run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean("idemR2dbcLeaseStore")).isInstanceOf(R2dbcLeaseStore.class);
      HandlerStrategies strategies = HandlerStrategies.builder().webFilter(ctx.getBean(IdempotencyWebFilter.class)).build();
      DisposableServer server = HttpServer.create().host("127.0.0.1").port(0)
          .handle(new ReactorHttpHandlerAdapter(RouterFunctions.toHttpHandler(routes(ctx.getBean(ConnectionFactory.class)), strategies)))
          .bindNow();
      try {
        test.run(WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + server.port())
            .responseTimeout(Duration.ofSeconds(30)).build());
      } finally {
        server.disposeNow();
      }
    });
  }

  @FunctionalInterface
  private interface ServedTest {
    void run(WebTestClient client) throws Exception;
  }

  private static long rows(String key) throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM orders WHERE idem_key = '" + key + "'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void aLostResponseIsReplayedFromTheR2dbcKeyTableAndTheRowIsWrittenOnce() {
    served(app().withPropertyValues("idem.mode=lease"), client -> {
      client.post().uri("/orders").header("Idempotency-Key", "k-lost").bodyValue("{\"item\":1}").exchange()
          .expectStatus().isEqualTo(201).expectBody(String.class).isEqualTo("order 1");
      // the client never saw that answer and sends the request again
      client.post().uri("/orders").header("Idempotency-Key", "k-lost").bodyValue("{\"item\":1}").exchange()
          .expectStatus().isEqualTo(201)
          .expectHeader().valueEquals("Idempotent-Replayed", "true")
          .expectBody(String.class).isEqualTo("order 1");
      assertThat(rows("k-lost")).isEqualTo(1);
      assertThat(runs).hasValue(1);
      // the key is in the R2DBC key table (the JDBC lease store's table and rows), not in memory
      try (Connection c = DB.target().open(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT state FROM idem_keys WHERE idem_key = 'k-lost'")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo("COMPLETED");
      }
    });
  }

  @Test
  void tenConcurrentDuplicatesRunTheHandlerOnce() {
    served(app().withPropertyValues("idem.store=r2dbc", "idem.mode=lease", "idem.in-progress=wait", "idem.max-wait=20s"), client -> {
      ExecutorService callers = Executors.newFixedThreadPool(10);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> statuses = new ArrayList<>();
      try {
        for (int i = 0; i < 10; i++) {
          Callable<Integer> call = () -> {
            start.await();
            return client.post().uri("/orders").header("Idempotency-Key", "k-race").bodyValue("{\"item\":2}").exchange()
                .returnResult(String.class).getStatus().value();
          };
          statuses.add(callers.submit(call));
        }
        start.countDown();
        for (Future<Integer> status : statuses) {
          assertThat(status.get(60, TimeUnit.SECONDS)).isEqualTo(201);
        }
      } finally {
        callers.shutdownNow();
      }
      assertThat(runs).hasValue(1);
      assertThat(rows("k-race")).isEqualTo(1);
    });
  }

  @Test
  void anotherBodyWithTheSameKeyIs422AndAMissingKey400() {
    served(app().withPropertyValues("idem.mode=lease"), client -> {
      client.post().uri("/orders").header("Idempotency-Key", "k-reused").bodyValue("{\"item\":3}").exchange()
          .expectStatus().isEqualTo(201);
      client.post().uri("/orders").header("Idempotency-Key", "k-reused").bodyValue("{\"item\":4}").exchange()
          .expectStatus().isEqualTo(422)
          .expectHeader().contentType("application/problem+json");
      client.post().uri("/orders").bodyValue("{\"item\":5}").exchange()
          .expectStatus().isEqualTo(400)
          .expectHeader().contentType("application/problem+json");
      assertThat(rows("k-reused")).isEqualTo(1);
      assertThat(runs).hasValue(1);
    });
  }

  @Test
  void modeAutoBesideAConnectionFactoryIsRefusedWithTheModeToSet() {
    app().run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemUnsupportedException.class))
          .hasMessageContaining("R2DBC ConnectionFactory").hasMessageContaining("set idem.mode=lease")
          .hasMessageContaining("idem.store=r2dbc");
    });
  }

  @Test
  void theR2dbcStoreOnAnApplicationWithoutAConnectionFactoryIsRefusedWithWhatIsMissing() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.principal=shared", "idem.mode=lease", "idem.store=r2dbc")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("is r2dbc")
              .hasMessageContaining("ConnectionFactory");
        });
  }
}
