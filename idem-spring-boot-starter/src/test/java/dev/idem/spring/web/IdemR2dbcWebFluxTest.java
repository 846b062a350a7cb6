package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.r2dbc.R2dbcLeaseStore;
import dev.idem.r2dbc.R2dbcTransactionalIdempotency;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.testkit.TestDatabase;
import dev.idem.webflux.IdempotencyWebFilter;
import dev.idem.webflux.TransactionalEngine;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.r2dbc.connection.R2dbcTransactionManager;
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
 * on PostgreSQL and idem-r2dbc, in both modes: with only {@code idem.principal} set ({@code
 * idem.mode=auto}) the handler's {@link DatabaseClient} writes and the key commit in one reactive
 * transaction; with {@code idem.mode=lease} the keys live in the R2DBC key table. Either way the
 * handler, which inserts a row, runs once per key.
 */
class IdemR2dbcWebFluxTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  private final AtomicInteger runs = new AtomicInteger();

  @BeforeAll
  static void ordersTable() throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, idem_key TEXT, body TEXT NOT NULL)");
      st.execute("CREATE TABLE accounts (name TEXT PRIMARY KEY, idem_key TEXT)");
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

  /** The application with only {@code idem.principal} set, as a user starts. */
  private ReactiveWebApplicationContextRunner app() {
    return new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.r2dbc())))
        .withPropertyValues(r2dbcProperties())
        .withPropertyValues("idem.principal=shared");
  }

  /** @return the application in {@code mode}: "auto" (transactional, the default) or "lease" */
  private ReactiveWebApplicationContextRunner app(String mode) {
    return mode.equals("auto") ? app() : app().withPropertyValues("idem.mode=" + mode);
  }

  /**
   * POST /orders: waits a little (so duplicates overlap), then inserts the body as a row; a body
   * with "unavailable" answers 503 after its insert. POST /accounts inserts a unique name and
   * answers a duplicate name 409, catching the database's refusal.
   */
  private RouterFunction<ServerResponse> routes(ConnectionFactory factory) {
    DatabaseClient db = DatabaseClient.create(factory);
    return RouterFunctions.route()
        .POST("/orders", request -> request.bodyToMono(String.class)
            .delayElement(Duration.ofMillis(200))
            .flatMap(body -> db.sql("INSERT INTO orders (idem_key, body) VALUES (:key, :body)")
                .bind("key", request.headers().firstHeader("Idempotency-Key"))
                .bind("body", body)
                .fetch().rowsUpdated()
                .thenReturn(body))
            .flatMap(body -> body.contains("unavailable")
                ? ServerResponse.status(503).bodyValue("try again")
                : ServerResponse.status(201).bodyValue("order " + runs.incrementAndGet())))
        .POST("/slow-orders", request -> request.bodyToMono(String.class)
            .flatMap(body -> db.sql("INSERT INTO orders (idem_key, body) VALUES (:key, :body)")
                .bind("key", request.headers().firstHeader("Idempotency-Key"))
                .bind("body", body)
                .fetch().rowsUpdated()
                .thenReturn(body))
            .delayElement(Duration.ofMillis(1500))
            .flatMap(body -> ServerResponse.status(201).bodyValue("slow order " + runs.incrementAndGet())))
        .POST("/accounts", request -> request.bodyToMono(String.class)
            .flatMap(name -> db.sql("INSERT INTO accounts (name, idem_key) VALUES (:name, :key)")
                .bind("name", name)
                .bind("key", request.headers().firstHeader("Idempotency-Key"))
                .fetch().rowsUpdated())
            .flatMap(rows -> ServerResponse.status(201).bodyValue("account " + runs.incrementAndGet()))
            .onErrorResume(DataIntegrityViolationException.class,
                e -> ServerResponse.status(409).bodyValue("taken " + runs.incrementAndGet())))
        .build();
  }

  /** Runs {@code test} against the application served by Reactor Netty on a random port. */
  private void served(ReactiveWebApplicationContextRunner runner, ServedTest test) {
    runner.run(ctx -> {
      assertThat(ctx).hasNotFailed();
      if (!ctx.getBeansOfType(TransactionalEngine.class).isEmpty()) {
        assertThat(ctx).hasSingleBean(R2dbcTransactionalIdempotency.class);
      } else {
        assertThat(ctx.getBean("idemR2dbcLeaseStore")).isInstanceOf(R2dbcLeaseStore.class);
      }
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

  /** As {@link #served}, with the server's port for a raw socket. */
  private void servedOnPort(ReactiveWebApplicationContextRunner runner, PortTest test) {
    runner.run(ctx -> {
      assertThat(ctx).hasNotFailed();
      HandlerStrategies strategies = HandlerStrategies.builder().webFilter(ctx.getBean(IdempotencyWebFilter.class)).build();
      DisposableServer server = HttpServer.create().host("127.0.0.1").port(0)
          .handle(new ReactorHttpHandlerAdapter(RouterFunctions.toHttpHandler(routes(ctx.getBean(ConnectionFactory.class)), strategies)))
          .bindNow();
      try {
        test.run(WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + server.port())
            .responseTimeout(Duration.ofSeconds(30)).build(), server.port());
      } finally {
        server.disposeNow();
      }
    });
  }

  @FunctionalInterface
  private interface PortTest {
    void run(WebTestClient client, int port) throws Exception;
  }

  @FunctionalInterface
  private interface ServedTest {
    void run(WebTestClient client) throws Exception;
  }

  private static long rows(String key) throws Exception {
    return rows("orders", key);
  }

  private static long rows(String table, String key) throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + table + " WHERE idem_key = '" + key + "'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"auto", "lease"})
  void aLostResponseIsReplayedFromTheR2dbcKeyTableAndTheRowIsWrittenOnce(String mode) {
    String key = "k-lost-" + mode;
    served(app(mode), client -> {
      client.post().uri("/orders").header("Idempotency-Key", key).bodyValue("{\"item\":1}").exchange()
          .expectStatus().isEqualTo(201).expectBody(String.class).isEqualTo("order 1");
      // the client never saw that answer and sends the request again
      client.post().uri("/orders").header("Idempotency-Key", key).bodyValue("{\"item\":1}").exchange()
          .expectStatus().isEqualTo(201)
          .expectHeader().valueEquals("Idempotent-Replayed", "true")
          .expectBody(String.class).isEqualTo("order 1");
      assertThat(rows(key)).isEqualTo(1);
      assertThat(runs).hasValue(1);
      // the key is in the R2DBC key table (the JDBC engines' table and rows), not in memory
      try (Connection c = DB.target().open(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT state FROM idem_keys WHERE idem_key = '" + key + "'")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo("COMPLETED");
      }
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"auto", "lease"})
  void tenConcurrentDuplicatesRunTheHandlerOnce(String mode) {
    String key = "k-race-" + mode;
    // transactional mode: duplicates wait on the first attempt's uncommitted key row; lease mode: on its lease
    ReactiveWebApplicationContextRunner runner = mode.equals("auto") ? app()
        : app().withPropertyValues("idem.store=r2dbc", "idem.mode=lease", "idem.in-progress=wait", "idem.max-wait=20s");
    served(runner, client -> {
      ExecutorService callers = Executors.newFixedThreadPool(10);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> statuses = new ArrayList<>();
      try {
        for (int i = 0; i < 10; i++) {
          Callable<Integer> call = () -> {
            start.await();
            return client.post().uri("/orders").header("Idempotency-Key", key).bodyValue("{\"item\":2}").exchange()
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
      assertThat(rows(key)).isEqualTo(1);
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"auto", "lease"})
  void anotherBodyWithTheSameKeyIs422AndAMissingKey400(String mode) {
    String key = "k-reused-" + mode;
    served(app(mode).withPropertyValues("idem.required-key-routes=POST /orders"), client -> {
      client.post().uri("/orders").header("Idempotency-Key", key).bodyValue("{\"item\":3}").exchange()
          .expectStatus().isEqualTo(201);
      client.post().uri("/orders").header("Idempotency-Key", key).bodyValue("{\"item\":4}").exchange()
          .expectStatus().isEqualTo(422)
          .expectHeader().contentType("application/problem+json");
      client.post().uri("/orders").bodyValue("{\"item\":5}").exchange()
          .expectStatus().isEqualTo(400)
          .expectHeader().contentType("application/problem+json");
      assertThat(rows(key)).isEqualTo(1);
      assertThat(runs).hasValue(1);
    });
  }

  /** Transactional mode: a 503 rolls back the handler's row with the claim, and the retry runs again. */
  @Test
  void aServerErrorRollsBackTheHandlersWritesAndTheRetryRunsAgain() {
    served(app(), client -> {
      client.post().uri("/orders").header("Idempotency-Key", "k-503").bodyValue("{\"item\":\"unavailable\"}").exchange()
          .expectStatus().isEqualTo(503);
      assertThat(rows("k-503")).isZero();
      client.post().uri("/orders").header("Idempotency-Key", "k-503").bodyValue("{\"item\":\"unavailable\"}").exchange()
          .expectStatus().isEqualTo(503).expectHeader().doesNotExist("Idempotent-Replayed");
      assertThat(rows("k-503")).isZero();
    });
  }

  /**
   * Transactional mode on PostgreSQL: the handler catches the database's refusal of a duplicate
   * name (which aborts the transaction) and answers 409; that answer is stored and replayed, and
   * the handler runs once.
   */
  @Test
  void aCaughtConstraintViolationIsAnswered409StoredAndReplayed() throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
      st.execute("INSERT INTO accounts (name) VALUES ('taken')");
    }
    served(app(), client -> {
      client.post().uri("/accounts").header("Idempotency-Key", "k-409").bodyValue("taken").exchange()
          .expectStatus().isEqualTo(409).expectBody(String.class).isEqualTo("taken 1");
      client.post().uri("/accounts").header("Idempotency-Key", "k-409").bodyValue("taken").exchange()
          .expectStatus().isEqualTo(409)
          .expectHeader().valueEquals("Idempotent-Replayed", "true")
          .expectBody(String.class).isEqualTo("taken 1");
      assertThat(runs).hasValue(1);
      assertThat(rows("accounts", "k-409")).isZero();
    });
  }

  /**
   * Transactional mode: the client closes its socket while the handler runs, after its insert; the
   * transaction rolls back with the claim, so nothing is kept, and the retry runs the handler once.
   */
  @Test
  void aClientThatDisconnectsInsideTheHandlerLeavesNothingAndTheRetryRunsOnce() {
    String key = "k-gone";
    servedOnPort(app(), (client, port) -> {
      // a first request makes the pool's connections and the key table
      client.post().uri("/orders").header("Idempotency-Key", "k-warm").bodyValue("{\"item\":8}").exchange()
          .expectStatus().isEqualTo(201);
      runs.set(0);
      try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
        String body = "{\"item\":9}";
        socket.getOutputStream().write(("POST /slow-orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Idempotency-Key: " + key + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
            .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        socket.getOutputStream().flush();
        Thread.sleep(500); // the handler has inserted its row and waits
      }
      Thread.sleep(2500); // past the handler's end, had it gone on
      assertThat(rows(key)).isZero();
      assertThat(rows("idem_keys", key)).isZero();
      assertThat(runs).hasValue(0);
      client.post().uri("/slow-orders").header("Idempotency-Key", key).bodyValue("{\"item\":9}").exchange()
          .expectStatus().isEqualTo(201).expectBody(String.class).isEqualTo("slow order 1");
      assertThat(rows(key)).isEqualTo(1);
    });
  }

  /**
   * Transactional mode: clients that close their socket at random points of the handler (before,
   * during and after its insert). Spring's rollback on the cancellation could reach the database
   * before the handler's statement being sent at that moment, which then committed on its own:
   * a row without its key, which a retry would write again.
   */
  @Test
  void aDisconnectRacingTheHandlersStatementCommittedItsRowWithoutTheKey() {
    servedOnPort(app(), (client, port) -> {
      client.post().uri("/orders").header("Idempotency-Key", "k-cut-warm").bodyValue("{\"item\":7}").exchange()
          .expectStatus().isEqualTo(201);
      java.util.Random random = new java.util.Random(7);
      for (int i = 0; i < 40; i++) {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
          String body = "{\"item\":" + i + "}";
          socket.getOutputStream().write(("POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              + "Idempotency-Key: k-cut-" + i + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
              .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
          socket.getOutputStream().flush();
          Thread.sleep(190 + random.nextInt(40)); // around the handler's insert, 200 ms in
        }
      }
      Thread.sleep(1500);
      try (Connection c = DB.target().open(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM orders o WHERE o.idem_key LIKE 'k-cut-%' AND NOT EXISTS"
              + " (SELECT 1 FROM idem_keys k WHERE k.idem_key = o.idem_key AND k.state = 'COMPLETED')")) {
        rs.next();
        assertThat(rs.getLong(1)).as("rows committed without their key").isZero();
      }
      try (Connection c = DB.target().open(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM idem_keys WHERE idem_key LIKE 'k-cut-%' AND state = 'IN_PROGRESS'")) {
        rs.next();
        assertThat(rs.getLong(1)).as("claims left").isZero();
      }
    });
  }

  /** Regression of the earlier refusal: idem.mode=auto beside a ConnectionFactory is transactional now, and says so. */
  @Test
  void modeAutoBesideAConnectionFactoryRunsTransactionalMode() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx).hasSingleBean(R2dbcTransactionalIdempotency.class);
      // in the transactions of Spring Boot's R2dbcTransactionManager, which the handlers' writes join
      assertThat(ctx.getBean(TransactionalEngine.class)).hasToString(
          ctx.getBean(R2dbcTransactionalIdempotency.class) + " in R2dbcTransactionManager");
      assertThat(ctx).hasSingleBean(R2dbcTransactionManager.class);
    });
  }

  /**
   * The application's transaction manager runs its transactions on another ConnectionFactory than
   * the keys': the filter's transactions would not hold the key's connection, so the claim, the
   * handler's writes and the stored answer would each commit on their own (a 503's rows kept, the
   * retry run again). Refused, as the servlet stack refuses a manager of another DataSource.
   */
  @Test
  void aTransactionManagerOfAnotherConnectionFactoryLeftTheHandlersWritesOutsideTheKeysTransaction() {
    String[] props = r2dbcProperties();
    String url = props[0].substring("spring.r2dbc.url=".length());
    String user = props[1].substring("spring.r2dbc.username=".length());
    ConnectionFactory other = io.r2dbc.spi.ConnectionFactories.get(url.replace("r2dbc:postgresql://", "r2dbc:postgresql://" + user + "@"));
    app().withBean("otherTransactions", org.springframework.transaction.ReactiveTransactionManager.class,
            () -> new R2dbcTransactionManager(other))
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), dev.idem.spring.IdemConfigurationException.class))
              .hasMessageContaining("otherTransactions").hasMessageContaining("another ConnectionFactory")
              .hasMessageContaining("idem.mode=lease");
        });
    // the application's own manager on the keys' ConnectionFactory is the filter's: a 503 rolls back the handler's row
    served(app().withUserConfiguration(OwnTransactionManager.class), client -> {
      client.post().uri("/orders").header("Idempotency-Key", "k-own-tm").bodyValue("{\"item\":\"unavailable\"}").exchange()
          .expectStatus().isEqualTo(503);
      assertThat(rows("k-own-tm")).isZero();
    });
  }

  /** An application that declares its transaction manager, on Spring Boot's ConnectionFactory. */
  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  static class OwnTransactionManager {
    @org.springframework.context.annotation.Bean
    org.springframework.transaction.ReactiveTransactionManager ownTransactions(ConnectionFactory factory) {
      return new R2dbcTransactionManager(factory);
    }
  }

  @Test
  void transactionalModeWithoutAConnectionFactoryIsRefusedWithWhatItNeeds() {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.principal=shared", "idem.mode=transactional")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemUnsupportedException.class))
              .hasMessageContaining("idem-r2dbc").hasMessageContaining("ConnectionFactory");
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
