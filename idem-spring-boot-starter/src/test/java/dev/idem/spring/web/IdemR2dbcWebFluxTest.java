package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.r2dbc.R2dbcLeaseStore;
import dev.idem.r2dbc.R2dbcTransactionalIdempotency;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.internal.SpringR2dbcTransactions;
import dev.idem.testkit.TestDatabase;
import dev.idem.webflux.IdempotencyWebFilter;
import dev.idem.webflux.TransactionalEngine;
import io.r2dbc.spi.ConnectionFactory;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
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
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.r2dbc.connection.R2dbcTransactionManager;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
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
  /** POST /gated: the handler waits for it after its insert. */
  private final CompletableFuture<Void> gate = new CompletableFuture<>();
  private final AtomicInteger gatedStarted = new AtomicInteger();
  private final AtomicInteger gatedCompleted = new AtomicInteger();

  @BeforeAll
  static void ordersTable() throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, idem_key TEXT, body TEXT NOT NULL)");
      st.execute("CREATE TABLE accounts (name TEXT PRIMARY KEY, idem_key TEXT)");
    }
  }

  /** The application with only {@code idem.principal} set, as a user starts. */
  private ReactiveWebApplicationContextRunner app() {
    return new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.r2dbc())))
        .withPropertyValues("spring.r2dbc.url=" + DB.r2dbcUrl())
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
        .POST("/gated", request -> request.bodyToMono(String.class)
            .flatMap(body -> db.sql("INSERT INTO orders (idem_key, body) VALUES (:key, :body)")
                .bind("key", request.headers().firstHeader("Idempotency-Key"))
                .bind("body", body)
                .fetch().rowsUpdated())
            .doOnNext(rows -> gatedStarted.incrementAndGet())
            .flatMap(rows -> Mono.fromFuture(gate, true)) // a cancelled request must not cancel the shared gate
            .then(Mono.defer(() -> ServerResponse.status(201).bodyValue("gated " + gatedCompleted.incrementAndGet()))))
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
    served(runner, (client, port) -> test.run(client));
  }

  /** As {@link #served(ReactiveWebApplicationContextRunner, ServedTest)}, with the server's port for raw sockets. */
  private void served(ReactiveWebApplicationContextRunner runner, ServedOnPort test) {
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
            .responseTimeout(Duration.ofSeconds(30)).build(), server.port());
      } finally {
        server.disposeNow();
      }
    });
  }

  @FunctionalInterface
  private interface ServedTest {
    void run(WebTestClient client) throws Exception;
  }

  @FunctionalInterface
  private interface ServedOnPort {
    void run(WebTestClient client, int port) throws Exception;
  }

  /** Sends a whole POST over a raw socket, so that the test decides when the connection closes. */
  private static Socket post(int port, String path, String key, String body) throws Exception {
    Socket socket = new Socket("127.0.0.1", port);
    OutputStream out = socket.getOutputStream();
    out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nIdempotency-Key: " + key
        + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
    out.flush();
    return socket;
  }

  /** Closes with a reset, as a client that gives up does. */
  private static void hangUp(Socket socket) throws Exception {
    socket.setSoLinger(true, 0);
    socket.close();
  }

  private static void await(String what, Callable<Boolean> condition) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.call()) {
      assertThat(System.nanoTime()).as(what).isLessThan(end);
      Thread.sleep(20);
    }
  }

  /** @return the key's record state in the key table, or null without a committed record */
  private static String keyState(String key) throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT state FROM idem_keys WHERE idem_key = '" + key + "'")) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  /** @return how many sessions of the test's database are inside a transaction */
  private static long openTransactions() throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()"
            + " AND pid <> pg_backend_pid() AND xact_start IS NOT NULL")) {
      rs.next();
      return rs.getLong(1);
    }
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
    // transactional mode with only idem.principal: duplicates of the running request get 409 (fail-fast);
    // lease mode: they wait for the first (idem.in-progress=wait) and get its replay. The first runs
    // 1.5 s in transactional mode: a fail-fast claim that gives up is confirmed once (about 110 ms)
    // before its 409, and with /orders' 200 ms duplicates that lagged on a loaded machine met the
    // first's commit within it and were all replayed, which is right but left the 409 untested.
    ReactiveWebApplicationContextRunner runner = mode.equals("auto") ? app()
        : app().withPropertyValues("idem.store=r2dbc", "idem.mode=lease", "idem.in-progress=wait", "idem.max-wait=20s");
    String uri = mode.equals("auto") ? "/slow-orders" : "/orders";
    served(runner, client -> {
      ExecutorService callers = Executors.newFixedThreadPool(10);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> statuses = new ArrayList<>();
      try {
        for (int i = 0; i < 10; i++) {
          Callable<Integer> call = () -> {
            start.await();
            return client.post().uri(uri).header("Idempotency-Key", key).bodyValue("{\"item\":2}").exchange()
                .returnResult(String.class).getStatus().value();
          };
          statuses.add(callers.submit(call));
        }
        start.countDown();
        List<Integer> answered = new ArrayList<>();
        for (Future<Integer> status : statuses) {
          answered.add(status.get(60, TimeUnit.SECONDS));
        }
        if (mode.equals("auto")) {
          assertThat(answered).containsOnly(201, 409).contains(201);
        } else {
          assertThat(answered).containsOnly(201);
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

  /** Transactional mode with idem.in-progress=wait: the duplicates wait for the first commit and all get its answer. */
  @Test
  void tenConcurrentDuplicatesThatWaitAllGetTheOneAnswer() {
    served(app().withPropertyValues("idem.in-progress=wait", "idem.max-wait=20s"), client -> {
      ExecutorService callers = Executors.newFixedThreadPool(10);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<String>> bodies = new ArrayList<>();
      try {
        for (int i = 0; i < 10; i++) {
          bodies.add(callers.submit(() -> {
            start.await();
            return client.post().uri("/orders").header("Idempotency-Key", "k-wait").bodyValue("{\"item\":9}").exchange()
                .expectStatus().isEqualTo(201).returnResult(String.class).getResponseBody().blockFirst(Duration.ofSeconds(30));
          }));
        }
        start.countDown();
        for (Future<String> body : bodies) {
          assertThat(body.get(60, TimeUnit.SECONDS)).isEqualTo("order 1");
        }
      } finally {
        callers.shutdownNow();
      }
      assertThat(runs).hasValue(1);
      assertThat(rows("k-wait")).isEqualTo(1);
    });
  }

  /**
   * Transactional mode, a client that leaves while the handler runs (its row written, not
   * committed): the cancellation reaches the transaction, which rolls back the row with the claim,
   * so the key is not left claimed and the retry runs the handler once; exactly one row.
   */
  @Test
  void aClientThatLeavesInsideTheHandlerRollsBackItsWritesAndTheRetryRunsOnce() {
    served(app(), (client, port) -> {
      Socket socket = post(port, "/gated", "k-left-inside", "{\"item\":7}");
      await("the handler wrote its row", () -> gatedStarted.get() == 1);
      hangUp(socket);
      await("the transaction ended", () -> openTransactions() == 0);
      gate.complete(null); // a handler still running would finish now

      assertThat(keyState("k-left-inside")).as("nothing committed for the key").isNull();
      assertThat(rows("k-left-inside")).as("the handler's row rolled back").isZero();
      client.post().uri("/gated").header("Idempotency-Key", "k-left-inside").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"item\":7}").exchange()
          .expectStatus().isEqualTo(201).expectHeader().doesNotExist("Idempotent-Replayed")
          .expectBody(String.class).isEqualTo("gated 1");
      client.post().uri("/gated").header("Idempotency-Key", "k-left-inside").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"item\":7}").exchange()
          .expectStatus().isEqualTo(201).expectHeader().valueEquals("Idempotent-Replayed", "true")
          .expectBody(String.class).isEqualTo("gated 1");
      assertThat(rows("k-left-inside")).isEqualTo(1);
      assertThat(gatedCompleted).as("one completed effect").hasValue(1);
    });
  }

  /**
   * Transactional mode, a client that leaves after the commit, before the answer is written (held
   * by an engine that waits after the commit): the retry gets the replay; exactly one row.
   */
  @Test
  void aClientThatLeavesAfterTheCommitGetsTheReplayOnItsRetry() {
    CompletableFuture<Void> afterCommit = new CompletableFuture<>();
    gate.complete(null);
    served(app().withUserConfiguration(AnswerHeldAfterCommit.class)
        .withBean("afterCommit", CompletableFuture.class, () -> afterCommit), (client, port) -> {
      Socket socket = post(port, "/gated", "k-left-after", "{\"item\":8}");
      await("the key and the row committed", () -> "COMPLETED".equals(keyState("k-left-after")));
      hangUp(socket);
      afterCommit.complete(null);

      client.post().uri("/gated").header("Idempotency-Key", "k-left-after").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"item\":8}").exchange()
          .expectStatus().isEqualTo(201).expectHeader().valueEquals("Idempotent-Replayed", "true")
          .expectBody(String.class).isEqualTo("gated 1");
      assertThat(rows("k-left-after")).isEqualTo(1);
      assertThat(gatedCompleted).hasValue(1);
    });
  }

  /** The starter's transactional engine, with its answer held after the commit until the test's gate opens. */
  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  static class AnswerHeldAfterCommit {
    @org.springframework.context.annotation.Bean
    TransactionalEngine heldAfterCommit(R2dbcTransactionalIdempotency engine, ConnectionFactory factory,
        org.springframework.transaction.ReactiveTransactionManager transactions, CompletableFuture<?> afterCommit) {
      SpringR2dbcTransactions spring = new SpringR2dbcTransactions(transactions, factory);
      return TransactionalEngine.of((request, handler) -> engine.execute(spring, request, connection -> handler)
          .delayUntil(result -> Mono.fromFuture(afterCommit, true)), engine.listener()); // the client leaving must not cancel the gate
    }
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
    served(app(), (client, port) -> {
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
    served(app(), (client, port) -> {
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
      assertThat(ctx).hasSingleBean(TransactionalEngine.class);
      // Spring Boot's R2dbcTransactionManager, whose transactions the handlers' writes join (see the 503 test)
      assertThat(ctx).hasSingleBean(R2dbcTransactionManager.class);
    });
  }

  /** Only idem.principal, a ConnectionFactory and no idem-r2dbc: the start-up names the missing module. */
  @Test
  void aConnectionFactoryWithoutIdemR2dbcIsRefusedNamingTheModule() {
    app().withClassLoader(new FilteredClassLoader("dev.idem.r2dbc.")).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemUnsupportedException.class))
          .hasMessageContaining("dev.idem:idem-r2dbc").hasMessageContaining("idem.store=memory");
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
    ConnectionFactory other = io.r2dbc.spi.ConnectionFactories.get(DB.r2dbcUrl());
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
