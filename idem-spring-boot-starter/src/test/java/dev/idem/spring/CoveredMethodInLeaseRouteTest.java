package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
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
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * An {@code @Idempotent} call to another system with the request's own key, inside a route in lease
 * mode whose answer is not stored (a 5xx is released, so the client retries and the handler runs
 * again). Was: the call was "covered by the request's record" and recorded nothing of its own, but
 * a released answer leaves no record, so the retry charged the payment API a second time. Only the
 * key's transaction covers such a call (its record and the request's commit or roll back together);
 * in lease mode the method keeps its own record.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = CoveredMethodInLeaseRouteTest.App.class)
class CoveredMethodInLeaseRouteTest {

  static final Path DIR = TransactionalFilterModeTest.tempDir();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("idem.mode", () -> "transactional");
    r.add("idem.required-key-routes", () -> "POST /orders");
    r.add("idem.routes.payments.route", () -> "POST /payments");
    r.add("idem.routes.payments.mode", () -> "lease");
    r.add("idem.routes.payments.store", () -> "memory");
  }

  /** The payment API: every call that reaches it charges the card. */
  static class Charges {
    static final AtomicInteger CALLS = new AtomicInteger();

    @Idempotent(operation = "charge")
    public String charge(@Idempotent.Key String key, int amount) {
      return "ch_" + CALLS.incrementAndGet();
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
      private final Charges charges;

      Shop(Charges charges) {
        this.charges = charges;
      }

      /** Charges, then fails to record the payment (a 503: released, so the client retries). */
      @PostMapping("/payments")
      ResponseEntity<String> pay(@RequestBody String amount, @RequestHeader("Idempotency-Key") String key,
          @RequestHeader(name = "X-Fail", required = false) String fail) {
        String charge = charges.charge(key, Integer.parseInt(amount.trim()));
        if (fail != null) {
          return ResponseEntity.status(503).body("{\"error\":\"ledger down\"}");
        }
        return ResponseEntity.status(201).body("{\"charge\":\"" + charge + "\"}");
      }

      /** The same inside the key's transaction (the filter's transactional mode). */
      @PostMapping("/orders")
      ResponseEntity<String> order(@RequestBody String amount, @RequestHeader("Idempotency-Key") String key) {
        String charge = charges.charge(key, Integer.parseInt(amount.trim()));
        return ResponseEntity.status(201).body("{\"charge\":\"" + charge + "\"}");
      }
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  final HttpClient http = HttpClient.newHttpClient();

  @BeforeEach
  void clean() {
    Charges.CALLS.set(0);
  }

  @Test
  void aRetryOfAReleasedAnswerInALeaseRouteDoesNotChargeAgain() throws Exception {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> first = post("/payments", key, true);
    assertThat(first.statusCode()).isEqualTo(503);
    HttpResponse<String> retry = post("/payments", key, false);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(Charges.CALLS).as("calls to the payment API").hasValue(1);
    assertThat(retry.body()).contains("ch_1");
  }

  @Test
  void inTheKeysTransactionTheCallIsStillCoveredByTheRequestsRecord() throws Exception {
    String key = UUID.randomUUID().toString();
    assertThat(post("/orders", key, false).statusCode()).isEqualTo(201);
    assertThat(post("/orders", key, false).statusCode()).isEqualTo(201);
    assertThat(Charges.CALLS).hasValue(1);
    assertThat(jdbc.queryForList("SELECT operation FROM idem_keys WHERE idem_key = ?", String.class, key))
        .as("one record per request").containsExactly("POST /orders");
  }

  private HttpResponse<String> post(String path, String key, boolean fail) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("Idempotency-Key", key).header("Content-Type", "text/plain");
    if (fail) {
      b.header("X-Fail", "1");
    }
    return http.send(b.POST(HttpRequest.BodyPublishers.ofString("12")).build(), HttpResponse.BodyHandlers.ofString());
  }
}
