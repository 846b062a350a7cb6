package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import dev.idem.docs.outbox.Inventory;
import dev.idem.docs.outbox.OrdersApplication;
import dev.idem.outbox.Intent;
import dev.idem.outbox.IntentId;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import dev.idem.spring.outbox.IdemOutbox;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Runs the outbox guide's Spring Boot snippet: {@code OrdersController} behind the starter's filter in
 * transactional mode on SQLite, with the starter's {@link IdemOutbox} and relay, and a Kafka transport
 * of the test's that records what it is given (and whether the order had committed by then).
 */
@SpringBootTest(classes = {OrdersApplication.class, OutboxSpringTest.Recording.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.principal=shared", "idem.required-key-routes=POST /orders", "idem.outbox.relay.interval=50ms",
        "spring.sql.init.mode=always", "spring.sql.init.schema-locations=classpath:orders-schema.sql"})
class OutboxSpringTest {

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> "jdbc:sqlite:" + dir.resolve("orders.db") + "?journal_mode=WAL&busy_timeout=10000");
  }

  /** A Kafka transport that records each delivery, and the orders committed with its record key at that moment. */
  @TestConfiguration
  static class Recording {
    static final List<String> DELIVERED = new CopyOnWriteArrayList<>();
    static final List<Integer> COMMITTED_ORDERS = new CopyOnWriteArrayList<>();

    @Bean
    IntentTransport recordingKafka(JdbcTemplate jdbc) {
      return new IntentTransport() {
        @Override
        public Intent.Kind kind() {
          return Intent.Kind.KAFKA;
        }

        @Override
        public List<Delivery> deliver(List<OutboxEntry> batch) {
          List<Delivery> out = new ArrayList<>();
          for (OutboxEntry e : batch) {
            COMMITTED_ORDERS.add(jdbc.queryForObject("SELECT COUNT(*) FROM orders WHERE id = ?", Integer.class, e.intent().route()));
            DELIVERED.add(e.id());
            out.add(Delivery.delivered(e.id()));
          }
          return out;
        }
      };
    }

    @Bean
    Inventory inventory() {
      return item -> {
        if (item.equals("out of stock")) {
          throw new IllegalStateException("no " + item);
        }
      };
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  @Autowired IdemOutbox outbox;
  @Autowired PlatformTransactionManager transactions;

  @BeforeEach
  void clear() {
    jdbc.update("DELETE FROM orders");
    jdbc.update("DELETE FROM idem_outbox");
    jdbc.update("DELETE FROM idem_keys");
    Recording.DELIVERED.clear();
    Recording.COMMITTED_ORDERS.clear();
  }

  private HttpResponse<String> post(String key, String item) throws Exception {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
        .header("Content-Type", "text/plain").header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(item)).build();
    return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
  }

  private long count(String sql, Object... args) {
    return jdbc.queryForObject(sql, Long.class, args);
  }

  private void awaitSent(long expected) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (count("SELECT COUNT(*) FROM idem_outbox WHERE state = 'SENT'") < expected && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
  }

  @Test
  void anOrderRecordsOneRowAndOneMessageTheRetryNothingMoreAndTheRelayPublishesAfterTheCommit() throws Exception {
    HttpResponse<String> first = post("order-1", "book");
    assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
    HttpResponse<String> retry = post("order-1", "book");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.body()).isEqualTo(first.body());

    assertThat(count("SELECT COUNT(*) FROM orders")).isEqualTo(1);
    assertThat(count("SELECT COUNT(*) FROM idem_outbox")).isEqualTo(1);
    // the intent is named after the scope stored with the key: the filter's principal and operation
    Map<String, Object> key = jdbc.queryForMap("SELECT principal, operation FROM idem_keys WHERE idem_key = 'order-1'");
    Map<String, Object> intent = jdbc.queryForMap("SELECT id, principal, operation, idem_key, intent_no, target FROM idem_outbox");
    assertThat(intent.get("principal")).isEqualTo(key.get("principal")).isEqualTo("anonymous");
    assertThat(intent.get("operation")).isEqualTo(key.get("operation")).isEqualTo("POST /orders");
    assertThat(intent.get("id")).isEqualTo(IntentId.of(Scope.of("anonymous", "POST /orders"), IdempotencyKey.of("order-1"), 0));
    assertThat(intent.get("target")).isEqualTo("orders");

    awaitSent(1);
    assertThat(count("SELECT COUNT(*) FROM idem_outbox WHERE state = 'SENT'")).isEqualTo(1);
    assertThat(Recording.DELIVERED).containsExactly((String) intent.get("id"));
    assertThat(Recording.COMMITTED_ORDERS).containsExactly(1); // the order was committed when the relay published
  }

  @Test
  void aRequestThatFailsAfterRecordingLeavesNoOrderNoMessageAndNoKey() throws Exception {
    HttpResponse<String> failed = post("order-2", "out of stock");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(count("SELECT COUNT(*) FROM orders")).isZero();
    assertThat(count("SELECT COUNT(*) FROM idem_outbox")).isZero();
    assertThat(count("SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'order-2'")).isZero();
    assertThat(post("order-3", "pen").statusCode()).isEqualTo(201);
    awaitSent(1);
    assertThat(Recording.DELIVERED).hasSize(1);
    assertThat(count("SELECT COUNT(*) FROM idem_outbox")).isEqualTo(1);
  }

  @Test
  void recordingOutsideAProtectedRequestIsRefusedAndWritesNothing() {
    Intent intent = Intent.kafka("orders", "x".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> outbox.record(intent))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("outside an operation that Idem protects");
    assertThatThrownBy(() -> new TransactionTemplate(transactions).executeWithoutResult(s -> outbox.record(intent)))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("outside an operation that Idem protects");
    assertThat(count("SELECT COUNT(*) FROM idem_outbox")).isZero();
  }
}
