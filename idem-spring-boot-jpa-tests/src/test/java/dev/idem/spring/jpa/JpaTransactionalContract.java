package dev.idem.spring.jpa;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.jpa.JpaApp.Accounts;
import dev.idem.spring.jpa.JpaApp.Api;
import dev.idem.spring.jpa.JpaApp.AuditEntries;
import dev.idem.spring.jpa.JpaApp.Tickets;
import dev.idem.testkit.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The everyday Spring Boot service (Spring MVC, Spring Data JPA on Hibernate, the starter with only
 * {@code idem.principal} set) against a real database: each subclass names the database and
 * whether open-session-in-view is on. Every test counts rows.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = JpaApp.class)
@ExtendWith(OutputCaptureExtension.class)
abstract class JpaTransactionalContract {

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @LocalServerPort int port;
  @Autowired Accounts accounts;
  @Autowired Tickets tickets;
  @Autowired AuditEntries audit;
  @Autowired Api api;
  @Autowired IdempotencyFilterConfig filter;

  /** The service's properties: this database, OSIV on or off, and for Idem only the principal. */
  static void properties(DynamicPropertyRegistry r, TestDatabase db, boolean openInView) {
    r.add("spring.datasource.url", () -> db.target().url());
    // a small pool, as in production under load: waiting duplicates must not take it
    r.add("spring.datasource.hikari.maximum-pool-size", () -> "4");
    r.add("spring.datasource.hikari.connection-timeout", () -> "10000");
    r.add("spring.jpa.hibernate.ddl-auto", () -> "create");
    r.add("spring.jpa.open-in-view", () -> Boolean.toString(openInView));
    r.add("idem.principal", () -> "shared");
    // the service of issue 35: orders (accounts) transactional on JPA, payments lease on Redis
    r.add("idem.routes.payments.route", () -> "POST /payments");
    r.add("idem.routes.payments.mode", () -> "lease");
    r.add("idem.routes.payments.store", () -> "redis");
    r.add("spring.data.redis.host", () -> "127.0.0.1");
    r.add("spring.data.redis.port", () -> "6379");
    r.add("idem.redis.key-prefix", () -> "idem-jpa-" + UUID.randomUUID() + ":");
  }

  @org.junit.jupiter.api.BeforeAll
  static void redis() {
    try (java.net.Socket s = new java.net.Socket()) {
      s.connect(new java.net.InetSocketAddress("127.0.0.1", 6379), 2000);
    } catch (IOException e) {
      String message = "Redis is not reachable at 127.0.0.1:6379 (" + e.getMessage() + ")";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      System.err.println("[idem-spring-boot-jpa-tests] SKIPPED: " + message);
      org.junit.jupiter.api.Assumptions.abort(message);
    }
  }

  /**
   * One service, routes of two kinds, as docs/spring-boot.md's recipe: {@code POST /accounts} writes
   * through JPA in transactional mode (the filter's auto choice), {@code POST /payments} calls
   * another system in lease mode on Redis ({@code idem.routes.payments.*}). Ten concurrent
   * duplicates of each, then a retry: one account and one payment call per key, the payment call
   * outside any transaction, and each route's policy and store in the filter's configuration.
   */
  @org.junit.jupiter.api.Test
  void tenConcurrentDuplicatesOfEachRouteGiveOneOrderAndOnePaymentCall() throws Exception {
    String key = unique("k");
    String email = unique("buyer") + "@example.com";
    List<HttpResponse<String>> orders = race("/accounts", key, email);
    List<HttpResponse<String>> payments = race("/payments", key, "12");
    for (List<HttpResponse<String>> answers : List.of(orders, payments)) {
      assertThat(answers).extracting(HttpResponse::statusCode).isSubsetOf(201, 409).contains(201);
    }
    HttpResponse<String> orderRetry = post("/accounts", key, email);
    HttpResponse<String> paymentRetry = post("/payments", key, "12");
    assertThat(replayed(orderRetry)).isTrue();
    assertThat(replayed(paymentRetry)).isTrue();
    assertThat(orders).filteredOn(r -> r.statusCode() == 201).extracting(HttpResponse::body).containsOnly(orderRetry.body());
    assertThat(payments).filteredOn(r -> r.statusCode() == 201).extracting(HttpResponse::body).containsOnly(paymentRetry.body());
    assertThat(accounts.countByEmail(email)).as("accounts").isEqualTo(1);
    assertThat(api.payments).as("payment calls").hasValue(1);
    assertThat(api.paymentsInTransaction).containsOnly(false);
    assertThat(filter.routeFor("POST", "/payments").toString())
        .startsWith("POST /payments (required; lease mode, store RedisLeaseStore");
    assertThat(filter.engineFor(filter.routeFor("POST", "/accounts"))).isInstanceOf(dev.idem.jdbc.TransactionalIdempotency.class);
  }

  private List<HttpResponse<String>> race(String path, String key, String body) throws Exception {
    java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(10);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(10);
    try {
      List<java.util.concurrent.Future<HttpResponse<String>>> futures = new java.util.ArrayList<>();
      for (int i = 0; i < 10; i++) {
        futures.add(pool.submit(() -> {
          start.await(10, java.util.concurrent.TimeUnit.SECONDS);
          return post(path, key, body);
        }));
      }
      List<HttpResponse<String>> answers = new java.util.ArrayList<>();
      for (java.util.concurrent.Future<HttpResponse<String>> f : futures) {
        answers.add(f.get(60, java.util.concurrent.TimeUnit.SECONDS));
      }
      return answers;
    } finally {
      pool.shutdownNow();
    }
  }

  @Autowired dev.idem.spring.rabbit.IdemRabbitListeners listeners;

  /**
   * A transactional consumer whose handler writes through a JPA repository, as a Spring service's
   * listener does. Was: its writes ran on another pooled connection in auto-commit, outside the
   * transaction that records the message's key, so a handler that saved and then failed left one
   * row per delivery. Now the save commits or rolls back with the message's key.
   */
  @org.junit.jupiter.api.Test
  void aConsumerHandlersJpaWritesJoinTheTransactionThatRecordsTheMessagesKey() {
    String failing = unique("consumer-fail") + "@example.com";
    String handled = unique("consumer-ok") + "@example.com";
    dev.idem.consumer.IdempotentConsumer consumer = listeners.transactional(unique("jpa"), "unused", (connection, message) -> {
      String email = new String(message.body(), java.nio.charset.StandardCharsets.UTF_8);
      accounts.save(new JpaApp.Account(email));
      if (email.equals(failing)) {
        throw new IllegalStateException("the handler fails after its save");
      }
    }, dev.idem.rabbitmq.RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "unused.dlq")).consumer();
    for (int delivery = 1; delivery <= 3; delivery++) {
      dev.idem.consumer.Verdict verdict = consumer.process(new dev.idem.consumer.InboundMessage("m-fail", java.util.Map.of(),
          failing.getBytes(java.nio.charset.StandardCharsets.UTF_8), delivery, "test"));
      assertThat(verdict.action()).isEqualTo(dev.idem.consumer.Verdict.Action.RETRY);
    }
    assertThat(accounts.countByEmail(failing)).as("rows left by a failing handler").isZero();
    for (int delivery = 1; delivery <= 3; delivery++) {
      dev.idem.consumer.Verdict verdict = consumer.process(new dev.idem.consumer.InboundMessage("m-ok", java.util.Map.of(),
          handled.getBytes(java.nio.charset.StandardCharsets.UTF_8), delivery, "test"));
      assertThat(verdict.action()).isEqualTo(dev.idem.consumer.Verdict.Action.ACK);
    }
    assertThat(accounts.countByEmail(handled)).as("rows for one message delivered three times").isEqualTo(1);
  }

  @BeforeEach
  void reset() {
    api.failNext.set(false);
    api.runs.set(0);
  }

  private static String unique(String what) {
    return what + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  HttpResponse<String> post(String path, String key, String body) throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static boolean replayed(HttpResponse<String> response) {
    return response.headers().firstValue("Idempotent-Replayed").map("true"::equalsIgnoreCase).orElse(false);
  }

  @Test
  void theDefaultModeBesideJpaIsTransactional() {
    assertThat(filter.engine()).isInstanceOf(TransactionalIdempotency.class);
  }

  /**
   * Was: with no idem.mode the starter ran lease mode; the repository's own transaction committed
   * the account, the handler then threw, the claim was released and the retry saved a second
   * account: two rows for one key.
   */
  @Test
  void aHandlerThatSavedThenFailedLeavesNoRowAndItsRetryWritesOne() throws Exception {
    String email = unique("then-fail") + "@example.com";
    String key = unique("k");
    api.failNext.set(true);
    HttpResponse<String> failed = post("/accounts/then-fail", key, email);
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(accounts.countByEmail(email)).isZero();

    HttpResponse<String> retry = post("/accounts/then-fail", key, email);
    assertThat(retry.statusCode()).isEqualTo(201);
    HttpResponse<String> again = post("/accounts/then-fail", key, email);
    assertThat(again.statusCode()).isEqualTo(201);
    assertThat(replayed(again)).isTrue();
    assertThat(again.body()).isEqualTo(retry.body());
    assertThat(accounts.countByEmail(email)).isEqualTo(1);
    assertThat(api.runs.get()).isEqualTo(2);
  }

  /**
   * Was: {@code 500 request-failed}. The repository marked the request's transaction rollback-only
   * when its flush hit the unique constraint, and the handler's own answer, 409, was lost.
   */
  @Test
  void aCaughtUniqueViolationAnswered409IsStoredAndReplayedInsteadOf500() throws Exception {
    assertConflictAnsweredAndReplayed("/accounts");
  }

  @Test
  void aCaughtUniqueViolationOfATransactionalServiceMethodAnswered409IsStoredAndReplayed() throws Exception {
    assertConflictAnsweredAndReplayed("/accounts/service");
  }

  private void assertConflictAnsweredAndReplayed(String path) throws Exception {
    String email = unique("taken") + "@example.com";
    assertThat(post(path, unique("k"), email).statusCode()).isEqualTo(201);
    String key = unique("k");
    HttpResponse<String> conflict = post(path, key, email);
    assertThat(conflict.statusCode()).isEqualTo(409);
    assertThat(conflict.body()).isEqualTo("email already registered");
    assertThat(replayed(conflict)).isFalse();

    HttpResponse<String> retry = post(path, key, email);
    assertThat(retry.statusCode()).isEqualTo(409);
    assertThat(retry.body()).isEqualTo("email already registered");
    assertThat(replayed(retry)).isTrue();
    assertThat(api.runs.get()).isEqualTo(2); // the first create and the 409; the retry ran nothing
    assertThat(accounts.countByEmail(email)).isEqualTo(1);
  }

  @Test
  void aSuccessAnsweredAfterARollbackOnlyMarkingIsRefusedAndNeverStored() throws Exception {
    String email = unique("lying") + "@example.com";
    assertThat(post("/accounts", unique("k"), email).statusCode()).isEqualTo(201);
    String key = unique("k");
    HttpResponse<String> refused = post("/accounts/lying", key, email);
    assertThat(refused.statusCode()).isEqualTo(500);
    assertThat(refused.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(refused.body()).doesNotContain("created");

    HttpResponse<String> retry = post("/accounts/lying", key, email);
    assertThat(retry.statusCode()).isEqualTo(500);
    assertThat(replayed(retry)).isFalse();
    assertThat(api.runs.get()).isEqualTo(3); // nothing was stored, so the retry ran again
    assertThat(accounts.countByEmail(email)).isEqualTo(1);
  }

  /**
   * A plain {@code save} of a SEQUENCE entity: Hibernate sends the INSERT at the flush before the
   * commit, after the handler answered 201. Its failure there must be a problem, never the 201.
   */
  @Test
  void aDeferredInsertThatFailsAtTheFlushIsAProblemNotAStoredSuccessAndItsRetryRunsAgain() throws Exception {
    String code = unique("ticket");
    assertThat(post("/tickets", unique("k"), code).statusCode()).isEqualTo(201);
    String key = unique("k");
    HttpResponse<String> failed = post("/tickets", key, code);
    assertThat(failed.statusCode()).isGreaterThanOrEqualTo(400);
    assertThat(failed.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(failed.body()).doesNotContain("ticket " + code);

    HttpResponse<String> retry = post("/tickets", key, code);
    assertThat(retry.statusCode()).isEqualTo(failed.statusCode());
    assertThat(replayed(retry)).isFalse();
    assertThat(api.runs.get()).isEqualTo(3);
    assertThat(tickets.countByCode(code)).isEqualTo(1);
  }

  @Test
  void aDeferredInsertCommitsWithItsKeyAndItsRetryReplays() throws Exception {
    String code = unique("ticket");
    String key = unique("k");
    HttpResponse<String> created = post("/tickets", key, code);
    assertThat(created.statusCode()).isEqualTo(201);
    HttpResponse<String> retry = post("/tickets", key, code);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(replayed(retry)).isTrue();
    assertThat(api.runs.get()).isEqualTo(1);
    assertThat(tickets.countByCode(code)).isEqualTo(1);
  }

  @Test
  void aVersionConflictAnswered409IsStoredAndReplayed() throws Exception {
    String email = unique("versioned") + "@example.com";
    HttpResponse<String> created = post("/accounts", unique("k"), email);
    long id = Long.parseLong(created.body().replace("account ", ""));
    assertThat(post("/accounts/" + id + "/credits?version=0", unique("k"), "5").body()).isEqualTo("credits 5 version 1");

    String key = unique("k");
    HttpResponse<String> stale = post("/accounts/" + id + "/credits?version=0", key, "7");
    assertThat(stale.statusCode()).isEqualTo(409);
    assertThat(stale.body()).isEqualTo("stale version 0");
    HttpResponse<String> retry = post("/accounts/" + id + "/credits?version=0", key, "7");
    assertThat(retry.statusCode()).isEqualTo(409);
    assertThat(replayed(retry)).isTrue();
    assertThat(accounts.findById(id).orElseThrow().credits).isEqualTo(5);
  }

  /**
   * A REQUIRES_NEW transaction inside the handler commits on its own, outside the request's: its
   * write outlives the failed request, and each retry writes it again. Idem cannot undo it; it
   * says so in the log.
   */
  @Test
  void aRequiresNewWriteEscapesTheRequestsTransactionAndIsReportedInTheLog(CapturedOutput output) throws Exception {
    String what = unique("audit");
    String key = unique("k");
    assertThat(post("/audited-failure", key, what).statusCode()).isEqualTo(500);
    assertThat(audit.countByWhat(what)).isEqualTo(1);
    assertThat(output.getOut() + output.getErr())
        .contains("suspended the request's transaction")
        .contains("REQUIRES_NEW");
  }

  /**
   * Was: each duplicate of a running request waited on its row lock holding a pooled connection,
   * with no bound: 48 waiting retries took the whole pool and an unrelated create waited 5.2 s.
   * Here twelve duplicates of a request that holds its transaction, on a pool of four, while an
   * unrelated create must go through: the duplicates are answered 409 at once (the default,
   * idem.in-progress=fail-fast) and hold no connection.
   */
  @Test
  void duplicatesOfARunningRequestGet409AtOnceAndLeaveThePoolToOtherRequests() throws Exception {
    String code = unique("slow");
    String key = unique("k");
    api.slowGate = new java.util.concurrent.CountDownLatch(1);
    api.slowEntered[0] = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.ExecutorService clients = java.util.concurrent.Executors.newFixedThreadPool(13);
    try {
      java.util.concurrent.Future<HttpResponse<String>> first = clients.submit(() -> post("/slow", key, code));
      assertThat(api.slowEntered[0].await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      java.util.List<java.util.concurrent.Future<HttpResponse<String>>> duplicates = new java.util.ArrayList<>();
      for (int i = 0; i < 12; i++) {
        duplicates.add(clients.submit(() -> post("/slow", key, code)));
      }
      for (java.util.concurrent.Future<HttpResponse<String>> duplicate : duplicates) {
        HttpResponse<String> answer = duplicate.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(answer.statusCode()).isEqualTo(409);
        assertThat(answer.headers().firstValue("Retry-After")).isPresent();
        assertThat(answer.body()).contains("in-progress");
      }
      // the first request still holds its transaction and its connection
      assertThat(first.isDone()).isFalse();
      String other = unique("other") + "@example.com";
      HttpResponse<String> unrelated = post("/accounts", unique("k"), other);
      assertThat(unrelated.statusCode()).isEqualTo(201);
      assertThat(first.isDone()).isFalse();

      api.slowGate.countDown();
      assertThat(first.get(30, java.util.concurrent.TimeUnit.SECONDS).statusCode()).isEqualTo(201);
    } finally {
      api.slowGate.countDown();
      clients.shutdownNow();
    }
    HttpResponse<String> retry = post("/slow", key, code);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(replayed(retry)).isTrue();
    assertThat(tickets.countByCode(code)).isEqualTo(1);
  }
}
