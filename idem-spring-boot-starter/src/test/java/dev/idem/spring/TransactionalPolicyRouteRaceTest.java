package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
import org.springframework.web.bind.annotation.RestController;

/**
 * Eight concurrent duplicates on a route whose own policy is transactional with another retention
 * (an engine of its own beside the filter's lease engine), on SQLite: one row, one run inside the
 * key's transaction, the others 201 with the same body or 409, and the retry replays it. Was: with
 * the filter's keys in memory the key table was not made at start-up, and the route's engine, rebuilt
 * for its own retention, never made it either: every request to the route was answered 503
 * store-unavailable.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = TransactionalPolicyRouteRaceTest.App.class)
class TransactionalPolicyRouteRaceTest {

  static final Path DIR = TransactionalFilterModeTest.tempDir();
  static final AtomicInteger RUNS = new AtomicInteger();
  static final AtomicInteger OUTSIDE = new AtomicInteger();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("spring.datasource.hikari.maximum-pool-size", () -> "8");
    r.add("idem.mode", () -> "lease");
    r.add("idem.store", () -> "memory");
    r.add("idem.required-key-routes", () -> "POST /other");
    r.add("idem.routes.ledger.route", () -> "POST /ledger/**");
    r.add("idem.routes.ledger.mode", () -> "transactional");
    r.add("idem.routes.ledger.retention", () -> "72h");
  }

  @AppWithoutSecurity
  static class App {
    @RestController
    static class Ledger {
      private final JdbcTemplate jdbc;

      Ledger(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
        jdbc.execute("CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT, amount TEXT)");
      }

      @PostMapping("/ledger/{account}/entries")
      ResponseEntity<String> entry(@PathVariable("account") String account, @RequestBody String amount) throws Exception {
        RUNS.incrementAndGet();
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
          OUTSIDE.incrementAndGet();
        }
        jdbc.update("INSERT INTO entries (account, amount) VALUES (?, ?)", account, amount);
        Thread.sleep(50);
        return ResponseEntity.status(201).body("{\"entry\":" + jdbc.queryForObject("SELECT last_insert_rowid()", Long.class) + "}");
      }
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  final HttpClient http = HttpClient.newHttpClient();

  @Test
  void eightConcurrentDuplicatesWriteOneEntryInTheKeysTransaction() throws Exception {
    String key = UUID.randomUUID().toString();
    CyclicBarrier barrier = new CyclicBarrier(8);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<HttpResponse<String>> responses = new ArrayList<>();
    try {
      List<Future<HttpResponse<String>>> futures = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        futures.add(pool.submit(() -> {
          barrier.await(10, TimeUnit.SECONDS);
          return post(key);
        }));
      }
      for (Future<HttpResponse<String>> f : futures) {
        responses.add(f.get(60, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(responses).extracting(HttpResponse::statusCode).as(responses.get(0).body()).isSubsetOf(201, 409).contains(201);
    HttpResponse<String> retry = post(key);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(responses).filteredOn(r -> r.statusCode() == 201).extracting(HttpResponse::body).containsOnly(retry.body());
    assertThat(RUNS).hasValue(1);
    assertThat(OUTSIDE).as("runs outside the key's transaction").hasValue(0);
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM entries", Integer.class)).isEqualTo(1);
    assertThat(jdbc.queryForList("SELECT operation FROM idem_keys", String.class)).containsExactly("POST /ledger/{account}/entries");
  }

  private HttpResponse<String> post(String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/ledger/acc1/entries"))
        .header("Idempotency-Key", key).header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString("12")).build(), HttpResponse.BodyHandlers.ofString());
  }
}
