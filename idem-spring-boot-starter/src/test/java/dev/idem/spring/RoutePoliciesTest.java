package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * One service, routes of two kinds: {@code POST /orders} writes to the database (transactional
 * mode, the filter's), {@code POST /payments} calls another system (lease mode on Redis, from
 * {@code idem.routes.payments.*}; Redis at 127.0.0.1:6379, skipped without it but under CI), and {@code POST /refunds/{id}} the same through
 * {@link IdempotencyPolicy} on its handler. Was: {@code idem.mode} was global, so a service could
 * not keep its payment call out of a database transaction without putting its orders in lease mode
 * too. Each handler says whether a transaction was open while it ran.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = RoutePoliciesTest.App.class)
class RoutePoliciesTest {

  static final Path DIR = TransactionalFilterModeTest.tempDir();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("spring.datasource.hikari.maximum-pool-size", () -> "8");
    r.add("idem.mode", () -> "transactional");
    r.add("idem.required-key-routes", () -> "POST /orders,POST /invoices");
    r.add("idem.optional-key-routes", () -> "POST /notes/**");
    r.add("idem.key-status.enabled", () -> "true");
    r.add("idem.routes.payments.route", () -> "POST /payments");
    r.add("idem.routes.payments.mode", () -> "lease");
    r.add("idem.routes.payments.store", () -> "redis");
    r.add("spring.data.redis.host", () -> LocalRedis.HOST);
    r.add("spring.data.redis.port", () -> Integer.toString(LocalRedis.PORT));
    r.add("idem.redis.key-prefix", () -> "idem-routes-" + UUID.randomUUID() + ":");
    r.add("idem.routes.payments.retention", () -> "48h");
  }

  /** Per handler: runs, and whether each run had a transaction open. */
  static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
  static final Map<String, List<Boolean>> IN_TRANSACTION = new ConcurrentHashMap<>();

  static void ran(String handler) {
    RUNS.computeIfAbsent(handler, k -> new AtomicInteger()).incrementAndGet();
    IN_TRANSACTION.computeIfAbsent(handler, k -> new CopyOnWriteArrayList<>())
        .add(TransactionSynchronizationManager.isActualTransactionActive());
  }

  /** The payment API's client, protected by its own key where it is called outside a protected request. */
  static class Charges {
    final AtomicInteger calls = new AtomicInteger();

    @Idempotent(operation = "charge")
    public String charge(@Idempotent.Key String key, int amount) {
      ran("charge");
      return "ch_" + calls.incrementAndGet();
    }
  }

  @AppWithoutSecurity
  static class App {
    @org.springframework.context.annotation.Bean
    Charges charges() {
      return new Charges();
    }

    @RestController
    static class Shop {
      private final JdbcTemplate jdbc;
      private final Charges charges;

      Shop(JdbcTemplate jdbc, Charges charges) {
        this.jdbc = jdbc;
        this.charges = charges;
        jdbc.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL)");
      }

      @PostMapping("/orders")
      ResponseEntity<String> order(@RequestBody String item) throws Exception {
        ran("orders");
        jdbc.update("INSERT INTO orders (item) VALUES (?)", item);
        Thread.sleep(30);
        return ResponseEntity.status(201).body("{\"order\":" + jdbc.queryForObject("SELECT last_insert_rowid()", Long.class) + "}");
      }

      /** Stands for a call to a payment API: must never run inside a database transaction of Idem's. */
      @PostMapping("/payments")
      ResponseEntity<String> pay(@RequestBody String amount, @RequestHeader(name = "Idempotency-Key", required = false) String key,
          @RequestHeader(name = "X-Charge-Key", required = false) String chargeKey,
          @RequestHeader(name = "X-Fail-After-Charge", required = false) String failAfterCharge) throws Exception {
        ran("payments");
        Thread.sleep(30);
        String charge = charges.charge(chargeKey != null ? chargeKey : key, Integer.parseInt(amount.trim()));
        if (failAfterCharge != null) {
          return ResponseEntity.status(503).body("{\"error\":\"receipt service down\"}"); // released: the retry runs again
        }
        return ResponseEntity.status(201).body("{\"charge\":\"" + charge + "\",\"amount\":" + amount + "}");
      }

      /** A transactional route whose handler calls the @Idempotent method with the request's key. */
      @PostMapping("/invoices")
      ResponseEntity<String> invoice(@RequestBody String amount, @RequestHeader("Idempotency-Key") String key) {
        ran("invoices");
        String charge = charges.charge(key, Integer.parseInt(amount.trim()));
        jdbc.update("INSERT INTO orders (item) VALUES (?)", "invoice " + charge);
        return ResponseEntity.status(201).body("{\"invoice\":\"" + charge + "\"}");
      }

      @PostMapping("/notes/{id}/tags")
      ResponseEntity<String> tag(@PathVariable("id") String id, @RequestBody String tag) {
        ran("tags");
        return ResponseEntity.status(201).body("{\"note\":\"" + id + "\",\"tag\":\"" + tag + "\"}");
      }

      @PostMapping("/refunds/{id}")
      @IdempotencyPolicy(mode = IdemProperties.Mode.LEASE, store = IdemProperties.StoreType.MEMORY, retention = "72h")
      ResponseEntity<String> refund(@PathVariable("id") String id, @RequestBody String amount) {
        ran("refunds");
        return ResponseEntity.status(201).body("{\"refund\":\"" + id + "\"}");
      }
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  final HttpClient http = HttpClient.newHttpClient();

  @org.junit.jupiter.api.BeforeAll
  static void redis() {
    LocalRedis.require();
  }

  @BeforeEach
  void clean() {
    RUNS.clear();
    IN_TRANSACTION.clear();
    jdbc.update("DELETE FROM orders");
    jdbc.update("DELETE FROM idem_keys");
  }

  @AfterAll
  static void removeFiles() throws Exception {
    try (var files = Files.list(DIR)) {
      for (Path p : files.toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Test
  void ordersRunInTheKeysTransactionAndPaymentsAndRefundsOutsideAnyEachWithItsOwnStore() throws Exception {
    String key = UUID.randomUUID().toString();
    for (String path : List.of("/orders", "/payments", "/refunds/7")) {
      HttpResponse<String> first = post(path, key, "12");
      HttpResponse<String> retry = post(path, key, "12");
      assertThat(first.statusCode()).as(path).isEqualTo(201);
      assertThat(retry.statusCode()).as(path).isEqualTo(201);
      assertThat(retry.body()).as(path).isEqualTo(first.body());
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).as(path).hasValue("true");
    }
    assertThat(RUNS.get("orders")).hasValue(1);
    assertThat(RUNS.get("payments")).hasValue(1);
    assertThat(RUNS.get("refunds")).hasValue(1);
    assertThat(IN_TRANSACTION.get("orders")).containsOnly(true);
    assertThat(IN_TRANSACTION.get("payments")).as("a payment call inside a transaction of Idem's").containsOnly(false);
    assertThat(IN_TRANSACTION.get("refunds")).containsOnly(false);
    // one key record per request, each in its route's store: the orders' in the table, the payments' in Redis, the refunds' in memory
    assertThat(jdbc.queryForList("SELECT operation FROM idem_keys", String.class)).containsExactly("POST /orders");
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM orders", Integer.class)).isEqualTo(1);
  }

  /**
   * An {@code @Idempotent} method called with the request's own key inside a route in lease mode
   * keeps its own record (a released answer would otherwise charge again on the retry); inside a
   * transactional route it is covered by the request's record (CoveredMethodInLeaseRouteTest).
   * Called with another key it keeps its own.
   */
  @Test
  void anIdempotentMethodCalledWithTheRequestsKeyInsideItsTransactionRecordsNoKeyOfItsOwn() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = post("/invoices", key, "12");
    HttpResponse<String> retry = post("/invoices", key, "12");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(RUNS.get("charge")).as("charges").hasValue(1);
    assertThat(IN_TRANSACTION.get("charge")).containsOnly(true);
    assertThat(jdbc.queryForList("SELECT operation FROM idem_keys", String.class)).as("key records").containsExactly("POST /invoices");
  }

  /**
   * In a lease-mode request the method keeps its own record: the request's answer may be released
   * (a 5xx after the charge), and then only the method's record keeps the retry from charging again.
   */
  @Test
  void inALeaseModeRequestWhoseAnswerIsReleasedTheMethodsOwnRecordKeepsTheRetryFromChargingAgain() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> failed = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
        .header("Idempotency-Key", key).header("X-Fail-After-Charge", "yes").header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString("12")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(failed.statusCode()).isEqualTo(503);
    HttpResponse<String> retry = post("/payments", key, "12");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(RUNS.get("payments")).as("the released request ran again").hasValue(2);
    assertThat(RUNS.get("charge")).as("charges").hasValue(1);
    assertThat(IN_TRANSACTION.get("charge")).containsOnly(false);

    // another key for the charge than the request's: the method keeps its own record, so two
    // requests (two request keys) with the same charge key charge once
    String other = UUID.randomUUID().toString();
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> withOwnKey = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
          .header("Idempotency-Key", UUID.randomUUID().toString()).header("X-Charge-Key", other).header("Content-Type", "text/plain")
          .POST(HttpRequest.BodyPublishers.ofString("12")).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(withOwnKey.statusCode()).isEqualTo(201);
    }
    assertThat(RUNS.get("charge")).as("charges: one per charge key").hasValue(2);
  }

  /**
   * Was: every key under the route POST /notes/** was scoped by that configured pattern, so key
   * status had to be asked with operation=POST%20%2Fnotes%2F** and metrics could not name the route.
   * The operation is now the handler's pattern.
   */
  @Test
  void aKeyIsScopedByTheHandlersPatternAndKeyStatusFindsItByItOrByARequestLine() throws Exception {
    String key = UUID.randomUUID().toString();
    assertThat(post("/notes/7/tags", key, "red").statusCode()).isEqualTo(201);
    assertThat(jdbc.queryForList("SELECT operation FROM idem_keys", String.class)).containsExactly("POST /notes/{id}/tags");
    // by the handler's pattern or by a request line; the catch-all route POST /notes/** names no one handler
    for (String operation : List.of("POST /notes/{id}/tags", "POST /notes/7/tags")) {
      HttpResponse<String> status = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/idempotency-keys/" + key
          + "?operation=" + java.net.URLEncoder.encode(operation, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20")))
          .GET().build(), HttpResponse.BodyHandlers.ofString());
      assertThat(status.statusCode()).as(operation).isEqualTo(200);
      assertThat(status.body()).as(operation).contains("\"state\":\"completed\"");
    }
  }

  @Test
  void aPolicyRouteRequiresItsKeyByDefault() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
        .header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString("5")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("idempotency-key-missing");
    assertThat(RUNS).doesNotContainKey("payments");
  }

  @Test
  void tenConcurrentDuplicatesOfEachRouteGiveOneOrderAndOnePaymentCall() throws Exception {
    String key = UUID.randomUUID().toString();
    for (String path : List.of("/orders", "/payments")) {
      List<HttpResponse<String>> responses = race(10, path, key);
      assertThat(responses).extracting(HttpResponse::statusCode).as(path).isSubsetOf(201, 409).contains(201);
      HttpResponse<String> after = post(path, key, "12");
      assertThat(after.statusCode()).isEqualTo(201);
      assertThat(responses).filteredOn(r -> r.statusCode() == 201).extracting(HttpResponse::body).containsOnly(after.body());
    }
    assertThat(RUNS.get("payments")).as("payment calls").hasValue(1);
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM orders", Integer.class)).as("orders").isEqualTo(1);
  }

  private List<HttpResponse<String>> race(int racers, String path, String key) throws Exception {
    CyclicBarrier barrier = new CyclicBarrier(racers);
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    try {
      List<Future<HttpResponse<String>>> futures = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        futures.add(pool.submit(() -> {
          barrier.await(10, TimeUnit.SECONDS);
          return post(path, key, "12");
        }));
      }
      List<HttpResponse<String>> responses = new ArrayList<>();
      for (Future<HttpResponse<String>> f : futures) {
        responses.add(f.get(60, TimeUnit.SECONDS));
      }
      return responses;
    } finally {
      pool.shutdownNow();
    }
  }

  private HttpResponse<String> post(String path, String key, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("Idempotency-Key", key).header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }
}
