package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.docs.steps.Payments;
import dev.idem.docs.steps.RidesApplication;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Runs the steps guide's Spring Boot snippets: {@code RidesController} behind the starter's filter in
 * lease mode on SQLite, with a payment service whose first answer is lost after it charged.
 */
@SpringBootTest(classes = {RidesApplication.class, StepsSpringTest.LossyPayments.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.principal=shared", "idem.mode=lease", "idem.required-key-routes=POST /rides",
        "spring.sql.init.mode=always", "spring.sql.init.schema-locations=classpath:rides-schema.sql"})
class StepsSpringTest {

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> "jdbc:sqlite:" + dir.resolve("rides.db") + "?journal_mode=WAL&busy_timeout=10000");
  }

  /** Charges once per key; the answer to a key's first charge is lost once {@link #loseNext} is set. */
  @TestConfiguration
  static class LossyPayments {
    static final Map<String, String> CHARGES = new ConcurrentHashMap<>();
    static final AtomicInteger MADE = new AtomicInteger();
    static volatile boolean loseNext;

    @Bean
    Payments payments() {
      return (key, rider, cents) -> {
        String charge = CHARGES.computeIfAbsent(key, k -> "ch-" + MADE.incrementAndGet());
        if (loseNext) {
          loseNext = false;
          throw new IOException("connection reset before the answer arrived");
        }
        return charge;
      };
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  @Autowired ApplicationContext context;

  @BeforeEach
  void clear() {
    jdbc.update("DELETE FROM rides");
    LossyPayments.CHARGES.clear();
    LossyPayments.MADE.set(0);
  }

  private HttpResponse<String> post(String key, String rider) throws Exception {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/rides"))
        .header("Content-Type", "text/plain").header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(rider)).build();
    return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
  }

  private long rides() {
    return jdbc.queryForObject("SELECT COUNT(*) FROM rides", Long.class);
  }

  @Test
  void aLostChargeAnswerIs503AndTheRetryWithTheSameKeyResumesWithoutASecondRideOrCharge() throws Exception {
    LossyPayments.loseNext = true;
    HttpResponse<String> first = post("ride-1", "alice");
    assertThat(first.statusCode()).isEqualTo(503);
    assertThat(first.headers().firstValue("Retry-After")).isPresent();
    assertThat(first.body()).contains("outcome-unknown").contains("processed in part");
    HttpResponse<String> retry = post("ride-1", "alice");
    assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
    assertThat(retry.body()).contains("\"charge\":\"ch-1\"");
    HttpResponse<String> again = post("ride-1", "alice");
    assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(again.body()).isEqualTo(retry.body());
    assertThat(rides()).isEqualTo(1);
    assertThat(LossyPayments.MADE).hasValue(1);
  }

  @Test
  void theScheduledCompleterFinishesARideWhoseCallerGaveUpAndTheRetryReplaysIt() throws Exception {
    LossyPayments.loseNext = true;
    assertThat(post("ride-2", "bob").statusCode()).isEqualTo(503);
    // the caller gives up; the completer's next pass (called here rather than waiting 5 s)
    Object controller = context.getBean("ridesController");
    Method finish = controller.getClass().getDeclaredMethod("finishAbandonedRides");
    finish.setAccessible(true);
    finish.invoke(controller);
    assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM idem_keys WHERE state = 'COMPLETED' AND idem_key = 'ride-2'", Long.class)).isEqualTo(1);
    HttpResponse<String> retry = post("ride-2", "bob");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(rides()).isEqualTo(1);
    assertThat(LossyPayments.MADE).hasValue(1);
  }
}
