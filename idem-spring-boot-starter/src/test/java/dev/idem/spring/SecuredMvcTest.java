package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.IdempotencyKeyReusedException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Principal;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * A Spring MVC application with Spring Security (HTTP basic, users alice and bob) on a real server,
 * the filter on {@code POST /receipts} and {@code @Idempotent} service methods behind {@code POST
 * /charges}: keys are scoped to the authenticated user by default, and Idem's refusals from
 * {@code @Idempotent} methods are problem details, not 500.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = SecuredMvcTest.App.class)
class SecuredMvcTest {

  static final Path DIR = tempDir();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("secured.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("idem.required-key-routes", () -> "POST /receipts");
    r.add("idem.optional-key-routes", () -> "");
  }

  private static Path tempDir() {
    try {
      Path dir = Files.createTempDirectory("idem-secured");
      dir.toFile().deleteOnExit();
      return dir;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {

    @Bean
    InMemoryUserDetailsManager users() {
      return new InMemoryUserDetailsManager(
          User.withUsername("alice").password("{noop}alice-pw").roles("USER").build(),
          User.withUsername("bob").password("{noop}bob-pw").roles("USER").build());
    }

    @Bean
    SecurityFilterChain security(HttpSecurity http) throws Exception {
      return http.authorizeHttpRequests(a -> a.anyRequest().authenticated())
          .httpBasic(Customizer.withDefaults())
          .csrf(c -> c.disable())
          .build();
    }

    @Bean
    Payments payments() {
      return new Payments();
    }

    /** Charges; each receipt names the user the method saw and a number that grows per run. */
    public static class Payments {
      final AtomicInteger charges = new AtomicInteger();
      volatile CountDownLatch started = new CountDownLatch(1);
      volatile CountDownLatch release = new CountDownLatch(0);

      /** Through the proxy to the target: the next runs wait for {@code release}. */
      public void hold(CountDownLatch started, CountDownLatch release) {
        this.started = started;
        this.release = release;
      }

      @Idempotent(operation = "charge")
      public Map<String, Object> charge(@Idempotent.Key String key, long amount) throws InterruptedException {
        started.countDown();
        release.await(20, TimeUnit.SECONDS);
        return Map.of("receipt", charges.incrementAndGet(), "user", SecurityContextHolder.getContext().getAuthentication().getName(),
            "amount", amount);
      }
    }

    @RestController
    static class Api {
      private final Payments payments;
      private final AtomicInteger receipts = new AtomicInteger();

      Api(Payments payments) {
        this.payments = payments;
      }

      @PostMapping("/receipts")
      ResponseEntity<Map<String, Object>> receipt(@RequestBody Map<String, Object> body, Principal user) {
        return ResponseEntity.status(HttpStatus.CREATED)
            .body(Map.of("receipt", receipts.incrementAndGet(), "user", user.getName(), "amount", body.get("amount")));
      }

      @PostMapping("/charges")
      Map<String, Object> charge(@RequestHeader(name = "Idempotency-Key", required = false) String key, @RequestBody Map<String, Long> body)
          throws InterruptedException {
        return payments.charge(key, body.get("amount"));
      }
    }

    /** An application controller that answers key reuse its own way: its handler wins over Idem's. */
    @RestController
    static class OwnAnswers {
      private final Payments payments;

      OwnAnswers(Payments payments) {
        this.payments = payments;
      }

      @PostMapping("/own/charges")
      Map<String, Object> charge(@RequestHeader("Idempotency-Key") String key, @RequestBody Map<String, Long> body) throws InterruptedException {
        return payments.charge(key, body.get("amount"));
      }
    }

    @RestControllerAdvice(assignableTypes = OwnAnswers.class)
    static class OwnAdvice {
      @ExceptionHandler(IdempotencyKeyReusedException.class)
      ResponseEntity<String> reused(IdempotencyKeyReusedException e) {
        return ResponseEntity.status(HttpStatus.I_AM_A_TEAPOT).body("own answer");
      }
    }
  }

  @LocalServerPort int port;
  @org.springframework.beans.factory.annotation.Autowired App.Payments payments;

  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final ObjectMapper json = new ObjectMapper();

  private HttpResponse<String> post(String user, String path, String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30))
        .header("Authorization", "Basic " + Base64.getEncoder().encodeToString((user + ":" + user + "-pw").getBytes(StandardCharsets.UTF_8)))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode problem(HttpResponse<String> response, int status, String type) throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    JsonNode problem = json.readTree(response.body());
    assertThat(problem.get("status").asInt()).isEqualTo(status);
    assertThat(problem.get("type").asText()).isEqualTo(type);
    assertThat(problem.get("detail").asText()).isNotEmpty();
    assertThat(response.body()).doesNotContain("Exception", "at dev.idem");
    return problem;
  }

  @Test
  void twoUsersReusingOneKeyNeverSeeEachOthersAnswer() throws Exception {
    String key = "shared-" + UUID.randomUUID();
    String body = "{\"amount\":500}";

    // Through the filter.
    HttpResponse<String> alices = post("alice", "/receipts", key, body);
    HttpResponse<String> bobs = post("bob", "/receipts", key, body);
    assertThat(alices.statusCode()).isEqualTo(201);
    assertThat(bobs.statusCode()).isEqualTo(201);
    assertThat(json.readTree(bobs.body()).get("user").asText()).isEqualTo("bob");
    assertThat(bobs.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(post("alice", "/receipts", key, body).body()).isEqualTo(alices.body());
    assertThat(post("bob", "/receipts", key, body).body()).isEqualTo(bobs.body());

    // Through an @Idempotent method.
    HttpResponse<String> alicesCharge = post("alice", "/charges", key, body);
    HttpResponse<String> bobsCharge = post("bob", "/charges", key, body);
    assertThat(alicesCharge.statusCode()).isEqualTo(200);
    assertThat(bobsCharge.statusCode()).isEqualTo(200);
    assertThat(json.readTree(alicesCharge.body()).get("user").asText()).isEqualTo("alice");
    assertThat(json.readTree(bobsCharge.body()).get("user").asText()).as("bob's own charge, not alice's receipt").isEqualTo("bob");
    assertThat(post("alice", "/charges", key, body).body()).isEqualTo(alicesCharge.body());
    assertThat(post("bob", "/charges", key, body).body()).isEqualTo(bobsCharge.body());
  }

  @Test
  void idempotentKeyReuseWas500AndIsNow422ProblemDetails() throws Exception {
    String key = "reuse-" + UUID.randomUUID();
    assertThat(post("alice", "/charges", key, "{\"amount\":1}").statusCode()).isEqualTo(200);
    problem(post("alice", "/charges", key, "{\"amount\":2}"), 422, "urn:idem:problem:idempotency-key-reused");
  }

  @Test
  void idempotentInvalidOrMissingKeyWas500AndIsNow400ProblemDetails() throws Exception {
    JsonNode tooLong = problem(post("alice", "/charges", "k".repeat(300), "{\"amount\":1}"), 400,
        "urn:idem:problem:idempotency-key-malformed");
    assertThat(tooLong.get("detail").asText()).doesNotContain("kkkkkkkk");
    problem(post("alice", "/charges", null, "{\"amount\":1}"), 400, "urn:idem:problem:idempotency-key-missing");
  }

  @Test
  void idempotentKeyInProgressWas500AndIsNow409WithAShortRetryAfter() throws Exception {
    String key = "busy-" + UUID.randomUUID();
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    payments.hold(started, release);
    try {
      CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> {
        try {
          return post("alice", "/charges", key, "{\"amount\":7}");
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
      HttpResponse<String> duplicate = post("alice", "/charges", key, "{\"amount\":7}");
      problem(duplicate, 409, "urn:idem:problem:request-in-progress");
      assertThat(duplicate.headers().firstValue("Retry-After")).as("not the 30 s of the whole lease").hasValue("1");
      release.countDown();
      assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    } finally {
      release.countDown();
      payments.hold(new CountDownLatch(1), new CountDownLatch(0));
    }
  }

  @Test
  void theApplicationsOwnExceptionHandlerWinsOverIdems() throws Exception {
    String key = "own-" + UUID.randomUUID();
    assertThat(post("alice", "/own/charges", key, "{\"amount\":1}").statusCode()).isEqualTo(200);
    HttpResponse<String> reused = post("alice", "/own/charges", key, "{\"amount\":2}");
    assertThat(reused.statusCode()).isEqualTo(418);
    assertThat(reused.body()).isEqualTo("own answer");
  }
}
