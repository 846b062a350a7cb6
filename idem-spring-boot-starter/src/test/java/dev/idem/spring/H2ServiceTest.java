package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spring.internal.ModeDecision;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring Boot service whose own tests run on an in-memory H2 database, as many services' do, with
 * the starter and nothing set for Idem but a required route: {@code idem.mode=auto} picks
 * transactional mode beside H2's DataSource, and the service keeps the contract (a retry replays
 * the first answer, a reused key is refused, concurrent duplicates make one row). H2 in its native
 * mode ({@code MODE=REGULAR}, the default) with a lock timeout longer than the handler.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = H2ServiceTest.App.class)
class H2ServiceTest {

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:h2:mem:idem-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000");
    r.add("idem.required-key-routes", () -> "POST /notes");
  }

  @AppWithoutSecurity
  static class App {
    @RestController
    static class Notes {
      private final JdbcTemplate jdbc;

      Notes(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
        jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id BIGINT AUTO_INCREMENT PRIMARY KEY, text VARCHAR(200) NOT NULL)");
      }

      @PostMapping("/notes")
      ResponseEntity<String> create(@RequestBody String text) throws InterruptedException {
        jdbc.update("INSERT INTO notes(text) VALUES (?)", text);
        Thread.sleep(50); // long enough for concurrent duplicates to meet
        Long id = jdbc.queryForObject("SELECT MAX(id) FROM notes", Long.class);
        return ResponseEntity.status(HttpStatus.CREATED).body("{\"id\":" + id + "}");
      }
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  @Autowired ModeDecision mode;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> post(String key, String text) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/notes")).timeout(Duration.ofSeconds(30))
        .header("Idempotency-Key", key).header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString(text)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private int rows(String text) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE text = ?", Integer.class, text);
  }

  @Test
  void autoModePicksTheTransactionalModeBesideH2() {
    assertThat(mode.mode).isEqualTo(IdemProperties.Mode.TRANSACTIONAL);
  }

  @Test
  void aRetryReplaysTheFirstAnswerAndAReusedKeyIsRefused() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = post(key, "buy milk");
    HttpResponse<String> retry = post(key, "buy milk");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(rows("buy milk")).isEqualTo(1);
    HttpResponse<String> reused = post(key, "buy bread");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(rows("buy bread")).isZero();
  }

  @Test
  void concurrentDuplicatesMakeOneRow() throws Exception {
    String key = UUID.randomUUID().toString();
    int n = 8;
    CyclicBarrier barrier = new CyclicBarrier(n);
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<Integer>> answers = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        answers.add(pool.submit(() -> {
          barrier.await();
          return post(key, "water plants").statusCode();
        }));
      }
      List<Integer> statuses = new ArrayList<>();
      for (Future<Integer> f : answers) {
        statuses.add(f.get());
      }
      assertThat(statuses).isSubsetOf(201, 409).contains(201);
    } finally {
      pool.shutdownNow();
    }
    assertThat(rows("water plants")).isEqualTo(1);
  }
}
