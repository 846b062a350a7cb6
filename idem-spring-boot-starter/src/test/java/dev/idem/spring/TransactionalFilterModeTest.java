package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.servlet.IdempotencyFilter;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
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
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The filter with {@code idem.mode=transactional} on a real server and an SQLite file: the key, the
 * handler's rows and the stored response commit or roll back together. Every test counts rows.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = TransactionalFilterModeTest.App.class)
public class TransactionalFilterModeTest {

  static final Path DIR = tempDir();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000&foreign_keys=true");
    r.add("spring.datasource.hikari.maximum-pool-size", () -> "8");
    r.add("idem.mode", () -> "transactional");
    r.add("idem.required-key-routes", () -> "POST /items");
    r.add("idem.max-response-size", () -> "2KB");
  }

  @AppWithoutSecurity
  static class App {
    @RestController
    static class Items {
      private final JdbcTemplate jdbc;

      Items(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
        jdbc.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)");
        jdbc.execute("CREATE TABLE IF NOT EXISTS parents (id INTEGER PRIMARY KEY)");
        jdbc.execute("CREATE TABLE IF NOT EXISTS children (id INTEGER PRIMARY KEY,"
            + " parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)");
      }

      /** Inserts a row, then answers as {@code outcome} says: ok, fail (503) or throw. */
      @PostMapping("/items")
      ResponseEntity<String> create(@RequestBody String name, @RequestParam(name = "outcome", defaultValue = "ok") String outcome) throws Exception {
        jdbc.update("INSERT INTO items (name) VALUES (?)", name);
        Long id = jdbc.queryForObject("SELECT last_insert_rowid()", Long.class);
        Thread.sleep(50); // a window for racing duplicates
        switch (outcome) {
          case "fail":
            return ResponseEntity.status(503).body("try later");
          case "big":
            return ResponseEntity.status(201).body("x".repeat(4096));
          case "big-fail":
            return ResponseEntity.status(503).body("y".repeat(4096));
          case "orphan": // a foreign key checked at COMMIT: the commit fails
            jdbc.update("INSERT INTO children (parent) VALUES (999)");
            return ResponseEntity.status(201).body("{\"id\":" + id + "}");
          case "throw":
            throw new IllegalStateException("the handler failed after its insert");
          default:
            return ResponseEntity.status(201).header("Location", "/items/" + id).body("{\"id\":" + id + "}");
        }
      }
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  final HttpClient http = HttpClient.newHttpClient();

  @BeforeEach
  void clean() {
    jdbc.update("DELETE FROM items");
    jdbc.update("DELETE FROM children");
    jdbc.update("DELETE FROM idem_keys");
  }

  @AfterAll
  static void removeFiles() throws Exception {
    try (var files = Files.list(DIR)) {
      for (Path p : files.toList()) {
        Files.deleteIfExists(p);
      }
    }
    Files.deleteIfExists(DIR);
  }

  @Test
  void aRetryReplaysTheCommittedAnswerAndTheRowExistsOnce() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = post(key, "a", "ok");
    HttpResponse<String> retry = post(key, "a", "ok");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(count("items")).isEqualTo(1);
    assertThat(count("idem_keys")).isEqualTo(1);
  }

  @Test
  void aFailureAnswerRollsBackTheHandlersRowWithTheKey() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> failed = post(key, "b", "fail");
    assertThat(failed.statusCode()).isEqualTo(503);
    assertThat(count("items")).as("the 503's insert rolled back").isZero();
    assertThat(count("idem_keys")).isZero();
    assertThat(post(key, "b", "ok").statusCode()).as("the retry runs").isEqualTo(201);
    assertThat(count("items")).isEqualTo(1);
  }

  @Test
  void aHandlerThatThrowsLeavesNoRowAndNoKey() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> failed = post(key, "c", "throw");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(failed.body()).doesNotContain("IllegalStateException").doesNotContain("at dev.idem");
    assertThat(count("items")).isZero();
    assertThat(count("idem_keys")).isZero();
  }

  @Test
  void aKeyReusedWithAnotherBodyIsRejectedAndAddsNoRow() throws Exception {
    String key = UUID.randomUUID().toString();
    assertThat(post(key, "d", "ok").statusCode()).isEqualTo(201);
    HttpResponse<String> reused = post(key, "other", "ok");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(reused.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/problem+json"));
    assertThat(count("items")).isEqualTo(1);
  }

  /**
   * With idem.in-progress=fail-fast (the default), a duplicate that arrives while the first request
   * runs in this instance is answered 409 with Retry-After at once, on SQLite too (it used to wait
   * for SQLite's write lock, run its handler and roll it back); one that arrives after it completed
   * replays its answer.
   */
  @Test
  void concurrentDuplicatesCommitOneRowAndEachGetsItsAnswerOrInProgress() throws Exception {
    String key = UUID.randomUUID().toString();
    List<HttpResponse<String>> responses = race(8, key, "e", "ok");
    assertThat(responses).extracting(HttpResponse::statusCode).isSubsetOf(201, 409).contains(201);
    String answer = responses.stream().filter(r -> r.statusCode() == 201).findFirst().orElseThrow().body();
    assertThat(responses).filteredOn(r -> r.statusCode() == 201).extracting(HttpResponse::body).containsOnly(answer);
    assertThat(responses).filteredOn(r -> r.statusCode() == 409).allSatisfy(r -> {
      assertThat(r.headers().firstValue("Retry-After")).isPresent();
      assertThat(r.body()).contains("request-in-progress");
    });
    assertThat(post(key, "e", "ok").body()).as("the retry after the race").isEqualTo(answer);
    assertThat(count("items")).isEqualTo(1);
    assertThat(count("idem_keys")).isEqualTo(1);
  }

  /**
   * Regression: a failure after the handler returned (here storing the response) rolled the
   * transaction back, yet the filter sent the handler's 201 for an item that did not exist.
   */
  @Test
  void aFailureToStoreTheResponseAnswers503NotTheHandlersAnswer() throws Exception {
    // key-last (the starter's default) stores the key and its response with an INSERT after the handler
    jdbc.execute("CREATE TRIGGER refuse_completion BEFORE INSERT ON idem_keys BEGIN SELECT RAISE(ABORT, 'refused'); END");
    try {
      HttpResponse<String> r = post(UUID.randomUUID().toString(), "f", "ok");
      assertThat(r.statusCode()).isEqualTo(503);
      assertThat(r.body()).contains("could not be committed");
    } finally {
      jdbc.execute("DROP TRIGGER refuse_completion");
    }
    assertThat(count("items")).isZero();
    assertThat(count("idem_keys")).isZero();
  }

  /**
   * Regression: a failed COMMIT answered 500 with a stack trace (a translated DataAccessException
   * passed through), and on SQLite left the pooled connection inside its transaction, so a later
   * request's writes were committed together with the failed one's, or failed with "cannot start a
   * transaction within a transaction". Then it answered "503 store unavailable, retry later",
   * although the commit failed on the request's own data (a foreign key checked at the COMMIT),
   * which a retry repeats: it is a 500 problem, request-failed.
   */
  @Test
  void aCommitRefusedByADeferredConstraintAnswers500AndLeavesNoTransactionOpenForLaterRequests() throws Exception {
    HttpResponse<String> failed = post(UUID.randomUUID().toString(), "g", "orphan");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(failed.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(failed.body()).contains("\"type\":\"" + IdempotencyFilter.PROBLEM_REQUEST_FAILED + "\"").doesNotContain("retry later");
    for (int i = 0; i < 20; i++) {
      assertThat(post(UUID.randomUUID().toString(), "after-" + i, "ok").statusCode()).isEqualTo(201);
    }
    assertThat(count("children")).as("the failed request's writes never commit").isZero();
    assertThat(count("items")).isEqualTo(20);
    assertThat(count("idem_keys")).isEqualTo(20);
  }

  /** Regression: a failure answer over the size cap committed the handler's writes; a short one rolls them back. */
  @Test
  void aFailureAnswerOverTheCapRollsBackLikeAShortOne() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> big = post(key, "h", "big-fail");
    assertThat(big.statusCode()).isEqualTo(503);
    assertThat(big.body()).hasSize(4096);
    assertThat(count("items")).isZero();
    assertThat(count("idem_keys")).isZero();
  }

  /**
   * The fault: an answer over the cap committed the handler's writes without the key, so a retry
   * ran the handler again (a second row). Now the key commits with a record of the answer without
   * its body, and a retry gets a problem and adds nothing.
   */
  @Test
  void answerLargerThanTheCapNeverRunsTheEffectTwice() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> big = post(key, "i", "big");
    assertThat(big.statusCode()).isEqualTo(201);
    assertThat(big.body()).isEqualTo("x".repeat(4096));
    assertThat(count("items")).isEqualTo(1);
    assertThat(count("idem_keys")).as("the key commits with the handler's row").isEqualTo(1);
    for (int attempt = 0; attempt < 2; attempt++) {
      HttpResponse<String> retry = post(key, "i", "big");
      assertThat(retry.statusCode()).isEqualTo(422);
      assertThat(retry.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/problem+json"));
      assertThat(retry.body()).contains("response-too-large-to-replay", "\"originalStatus\":201", "\"originalBodyBytes\":4096");
    }
    assertThat(count("items")).as("the handler ran once").isEqualTo(1);
  }

  /**
   * Key-last (the starter's default): the handler runs before the key is recorded, so an answer
   * over the cap, which streams to the client before the handler returns, claims the key just
   * before its first byte. Racing duplicates must never stream an answer of their own: one client
   * gets the handler's answer, every other the stored record's problem, and one row commits.
   */
  @Test
  void concurrentDuplicatesOfAnAnswerOverTheCapStreamOnlyOneAnswer() throws Exception {
    List<HttpResponse<String>> responses = race(6, UUID.randomUUID().toString(), "s", "big");
    assertThat(responses).filteredOn(r -> r.statusCode() == 201).hasSize(1)
        .allSatisfy(r -> assertThat(r.body()).isEqualTo("x".repeat(4096)));
    assertThat(responses).filteredOn(r -> r.statusCode() != 201)
        .allSatisfy(r -> {
          // in progress while the first runs in this instance (fail-fast), the stored record's problem after
          assertThat(r.statusCode()).isIn(409, 422);
          assertThat(r.body()).containsAnyOf("response-too-large-to-replay", "request-in-progress");
        });
    assertThat(count("items")).as("one handler run committed").isEqualTo(1);
    assertThat(count("idem_keys")).isEqualTo(1);
  }

  /** {@code racers} clients that send the same request at once, released together. */
  private List<HttpResponse<String>> race(int racers, String key, String name, String outcome) throws Exception {
    CyclicBarrier barrier = new CyclicBarrier(racers);
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    try {
      List<Future<HttpResponse<String>>> futures = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        futures.add(pool.submit(() -> {
          barrier.await(10, TimeUnit.SECONDS);
          return post(key, name, outcome);
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

  private HttpResponse<String> post(String key, String name, String outcome) throws Exception {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/items?outcome=" + outcome))
        .header("Idempotency-Key", key)
        .header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString(name))
        .build();
    return http.send(request, HttpResponse.BodyHandlers.ofString());
  }

  private long count(String table) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM " + table, Long.class);
  }

  public static Path tempDir() {
    try {
      return Files.createTempDirectory("idem-tx-filter");
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
