package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link KeyStatusEndpoint} on Jetty, with the filter and a real HTTP client: a caller reads its own keys only. */
class KeyStatusEndpointTest {

  /** A clock the test moves, standing in for the store's clock. */
  static final class MovableClock extends Clock {
    final AtomicLong millis = new AtomicLong(System.currentTimeMillis());

    @Override
    public ZoneOffset getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis.get());
    }
  }

  private final MovableClock clock = new MovableClock();
  private final InMemoryLeaseStore store = new InMemoryLeaseStore(clock);
  private final TestApp app = new TestApp();
  private TestServer server;

  @AfterEach
  void stop() {
    app.release.countDown();
    if (server != null) {
      server.close();
    }
  }

  private IdempotencyFilterConfig config() {
    LeaseIdempotency engine = LeaseIdempotency.builder(store).lease(Duration.ofSeconds(30)).retention(Duration.ofMinutes(10)).build();
    return IdempotencyFilterConfig.builder(engine).required("POST", "/notes").required("POST", "/slow")
        .optional("PATCH", "/notes/*").build();
  }

  private void start(KeyStatusReader reader) throws Exception {
    IdempotencyFilterConfig config = config();
    server = new TestServer(config, app, null, new KeyStatusEndpoint(config, reader));
  }

  private HttpResponse<byte[]> post(String path, String user, String key) throws Exception {
    return server.send(server.request(path).header(TestServer.USER_HEADER, user).header("Idempotency-Key", key)
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{\"text\":\"hi\"}")).build());
  }

  private HttpResponse<byte[]> status(String user, String rawKey, String rawOperation) throws Exception {
    HttpRequest.Builder b = server.request(KeyStatusEndpoint.DEFAULT_PATH + "/" + rawKey
        + (rawOperation == null ? "" : "?operation=" + rawOperation)).GET();
    if (user != null) {
      b.header(TestServer.USER_HEADER, user);
    }
    return server.send(b.build());
  }

  private static String body(HttpResponse<byte[]> r) {
    return new String(r.body(), StandardCharsets.UTF_8);
  }

  @Test
  void aCompletedKeyOfTheCallerAnswersItsStoredStatusAndTimes() throws Exception {
    start(store);
    assertThat(post("/notes", "alice", "k-1").statusCode()).isEqualTo(201);
    HttpResponse<byte[]> r = status("alice", "k-1", "POST%20/notes");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/json"));
    assertThat(r.headers().firstValue("Cache-Control")).hasValue("no-store");
    KeyStatus.Completed stored = (KeyStatus.Completed) store.status(
        dev.idem.core.Scope.of("alice", "POST /notes"), dev.idem.core.IdempotencyKey.of("k-1"));
    assertThat(body(r)).isEqualTo("{\"state\":\"completed\",\"status\":201,\"completedAt\":\"" + stored.completedAt()
        + "\",\"expiresAt\":\"" + stored.expiresAt() + "\"}");
    assertThat(app.calls("POST /notes")).as("reading a status runs nothing").isEqualTo(1);
  }

  @Test
  void unknownExpiredAndAnotherPrincipalsKeysGetTheSameBytes() throws Exception {
    start(store);
    post("/notes", "alice", "k-2");
    HttpResponse<byte[]> otherPrincipal = status("bob", "k-2", "POST%20/notes");
    HttpResponse<byte[]> anonymous = status(null, "k-2", "POST%20/notes");
    HttpResponse<byte[]> unknown = status("alice", "k-3", "POST%20/notes");
    HttpResponse<byte[]> otherOperation = status("alice", "k-2", "POST%20/slow");
    HttpResponse<byte[]> unconfigured = status("alice", "k-2", "DELETE%20/notes");
    clock.millis.addAndGet(Duration.ofMinutes(11).toMillis());
    HttpResponse<byte[]> expired = status("alice", "k-2", "POST%20/notes");
    for (HttpResponse<byte[]> r : java.util.List.of(otherPrincipal, anonymous, unknown, otherOperation, unconfigured, expired)) {
      assertThat(r.statusCode()).isEqualTo(404);
      assertThat(r.body()).isEqualTo(unknown.body());
      assertThat(r.headers().firstValue("Content-Type")).isEqualTo(unknown.headers().firstValue("Content-Type"));
      assertThat(r.headers().firstValue("Content-Length")).isEqualTo(unknown.headers().firstValue("Content-Length"));
      assertThat(r.headers().firstValue("Cache-Control")).hasValue("no-store");
    }
    assertThat(body(unknown)).contains("\"status\":404").contains(KeyStatusEndpoint.NOT_FOUND).doesNotContain("k-3").doesNotContain("alice");
    assertThat(unknown.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/problem+json"));
  }

  @Test
  void aKeyInProgressAnswersItsLeaseAndTheRetryHint() throws Exception {
    start(store);
    app.started = new CountDownLatch(1);
    CompletableFuture<HttpResponse<byte[]>> slow = CompletableFuture.supplyAsync(() -> {
      try {
        return post("/slow", "alice", "k-slow");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(app.started.await(20, TimeUnit.SECONDS)).isTrue();
    HttpResponse<byte[]> r = status("alice", "k-slow", "POST%20%2Fslow");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(body(r)).matches("\\{\"state\":\"in_progress\",\"leaseUntil\":\"[0-9T:.Z-]+\",\"retryAfterSeconds\":1}");
    app.release.countDown();
    assertThat(slow.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
    assertThat(body(status("alice", "k-slow", "POST%20%2Fslow"))).startsWith("{\"state\":\"completed\",\"status\":201,");
  }

  @Test
  void aPercentEncodedKeyIsTheKeyTheFilterRecorded() throws Exception {
    start(store);
    assertThat(post("/notes", "alice", "\"a b?c#\"").statusCode()).isEqualTo(201);
    assertThat(status("alice", "a%20b%3Fc%23", "POST%20/notes").statusCode()).isEqualTo(200);
    assertThat(status("alice", "a%20b%3Fc", "POST%20/notes").statusCode()).isEqualTo(404);
  }

  @Test
  void aKeyUnderAPatternRouteIsFoundByThePatternOrByTheRequestLine() throws Exception {
    start(store);
    HttpResponse<byte[]> patched = server.send(server.request("/notes/1").header(TestServer.USER_HEADER, "alice")
        .header("Idempotency-Key", "k-patch").header("Content-Type", "application/json")
        .method("PATCH", BodyPublishers.ofString("{}")).build());
    assertThat(patched.statusCode()).isEqualTo(201);
    assertThat(status("alice", "k-patch", "PATCH%20%2Fnotes%2F*").statusCode()).as("the route's pattern").isEqualTo(200);
    assertThat(status("alice", "k-patch", "PATCH%20%2Fnotes%2F1").statusCode()).as("the request line").isEqualTo(200);
    assertThat(status("alice", "k-patch", "PATCH%20%2Fnotes%2F2").statusCode()).as("the same route, so the same scope").isEqualTo(200);
    assertThat(status("alice", "k-patch", "PATCH%20%2Fother").statusCode()).as("no route").isEqualTo(404);
    assertThat(status("alice", "k-patch", "PATCH%20notes").statusCode()).isEqualTo(404);
  }

  @Test
  void aMalformedKeyOrAMissingOperationIsA400ProblemAndAnotherMethodA405() throws Exception {
    start(store);
    // Jetty itself refuses %00 and other control characters, an encoded '/' and broken escapes with its own 400, before any filter
    for (String raw : new String[] {"%C3%A9", "x".repeat(256)}) {
      HttpResponse<byte[]> r = status("alice", raw, "POST%20/notes");
      assertThat(r.statusCode()).as(raw).isEqualTo(400);
      assertThat(body(r)).contains(IdemProblems.KEY_MALFORMED);
      assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/problem+json"));
    }
    HttpResponse<byte[]> missing = status("alice", "k", null);
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(body(missing)).contains(KeyStatusEndpoint.OPERATION_MISSING);
    HttpResponse<byte[]> twice = status("alice", "k", "POST%20/notes&operation=POST%20/notes");
    assertThat(twice.statusCode()).isEqualTo(400);
    HttpResponse<byte[]> delete = server.send(server.request(KeyStatusEndpoint.DEFAULT_PATH + "/k?operation=POST%20/notes")
        .header(TestServer.USER_HEADER, "alice").DELETE().build());
    assertThat(delete.statusCode()).isEqualTo(405);
    assertThat(delete.headers().firstValue("Allow")).hasValue("GET");
  }

  @Test
  void percentDecodingRefusesBrokenEscapesAndNonAscii() {
    assertThat(KeyStatusEndpoint.percentDecode("a%20b%3f")).isEqualTo("a b?");
    assertThat(KeyStatusEndpoint.percentDecode("a+b")).isEqualTo("a+b");
    for (String raw : new String[] {"%ZZ", "%2", "%", "\u00e9", "%C3%A9"}) {
      assertThatThrownBy(() -> KeyStatusEndpoint.percentDecode(raw)).as(raw).isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void aStoreFailureIsA503ProblemWithoutAStackTrace() throws Exception {
    start((scope, key) -> {
      throw new IdemStoreException("connection refused", null);
    });
    HttpResponse<byte[]> r = status("alice", "k", "POST%20/notes");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(body(r)).contains(IdemProblems.STORE_UNAVAILABLE).doesNotContain("connection refused").doesNotContain("Exception");
  }

  @Test
  void otherPathsPassThroughAndABadPathIsRefusedAtConstruction() throws Exception {
    start(store);
    assertThat(server.send(server.request("/notes").header(TestServer.USER_HEADER, "alice").GET().build()).statusCode())
        .isNotEqualTo(404);
    assertThat(server.send(server.request(KeyStatusEndpoint.DEFAULT_PATH + "/").GET().build()).statusCode())
        .as("no key: not the endpoint's").isEqualTo(server.send(server.request("/nothing-here").GET().build()).statusCode());
    assertThatThrownBy(() -> new KeyStatusEndpoint(config(), store, "/keys/")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new KeyStatusEndpoint(config(), store, "keys")).isInstanceOf(IllegalArgumentException.class);
  }

  /**
   * Regression: under a context path, the operation a client names by default is the request line
   * it sent ({@code "POST /shop/notes"}), and the endpoint matched it against the routes without
   * the context path, so every key of an application not at the root read as unknown.
   */
  @Test
  void underAContextPathAKeyIsFoundByTheRouteTheScopeOperationOrTheRequestLineAsSent() throws Exception {
    IdempotencyFilterConfig config = config();
    server = new TestServer("/shop", config, app, null, new KeyStatusEndpoint(config, store));
    assertThat(post("/shop/notes", "alice", "k-ctx2").statusCode()).isEqualTo(201);
    for (String operation : java.util.List.of("POST%20/notes", "POST%20/shop/notes")) {
      HttpResponse<byte[]> r = server.send(server.request("/shop" + KeyStatusEndpoint.DEFAULT_PATH + "/k-ctx2?operation=" + operation)
          .header(TestServer.USER_HEADER, "alice").GET().build());
      assertThat(r.statusCode()).as(operation).isEqualTo(200);
      assertThat(body(r)).as(operation).startsWith("{\"state\":\"completed\",\"status\":201,");
    }
    HttpResponse<byte[]> outside = server.send(server.request("/shop" + KeyStatusEndpoint.DEFAULT_PATH + "/k-ctx2?operation=POST%20/other/notes")
        .header(TestServer.USER_HEADER, "alice").GET().build());
    assertThat(outside.statusCode()).as("a path that is not the route's, in or out of the context").isEqualTo(404);
  }

  /** A route under the endpoint's path would be answered by the endpoint (405 for its POSTs): refused when the endpoint is made. */
  @Test
  void aRouteUnderTheEndpointsPathIsRefusedAtConstruction() {
    LeaseIdempotency engine = LeaseIdempotency.builder(store).build();
    IdempotencyFilterConfig under = IdempotencyFilterConfig.builder(engine).required("POST", "/idempotency-keys/*").build();
    assertThatThrownBy(() -> new KeyStatusEndpoint(under, store))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("POST /idempotency-keys/*");
    IdempotencyFilterConfig beside = IdempotencyFilterConfig.builder(engine).required("POST", "/idempotency-keys-archive").build();
    assertThat(new KeyStatusEndpoint(beside, store).path()).isEqualTo(KeyStatusEndpoint.DEFAULT_PATH);
  }
}
