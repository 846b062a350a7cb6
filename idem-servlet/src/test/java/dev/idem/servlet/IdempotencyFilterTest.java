package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import java.io.ByteArrayInputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The filter on embedded Jetty 12 with {@link InMemoryLeaseStore}, driven by java.net.http. */
class IdempotencyFilterTest {

  static final int LIMIT = 16 * 1024;

  InMemoryLeaseStore store;
  TestApp app;
  TestServer server;

  @BeforeEach
  void start() throws Exception {
    store = new InMemoryLeaseStore();
    app = new TestApp();
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(store)
        .required("POST", "/required")
        .optional("POST", "/**")
        .optional("PATCH", "/notes/*")
        .maxBodyBytes(LIMIT)
        .build();
    server = new TestServer(config, app);
  }

  @AfterEach
  void stop() {
    app.release.countDown();
    server.close();
  }

  HttpResponse<byte[]> post(String path, String key, String contentType, String body) throws Exception {
    HttpRequest.Builder b = server.request(path).POST(BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    if (contentType != null) {
      b.header("Content-Type", contentType);
    }
    return server.send(b.build());
  }

  HttpResponse<byte[]> postJson(String path, String key, String json) throws Exception {
    return post(path, key, "application/json", json);
  }

  static String text(HttpResponse<byte[]> r) {
    return new String(r.body(), StandardCharsets.UTF_8);
  }

  static String header(HttpResponse<byte[]> r, String name) {
    return r.headers().firstValue(name).orElse(null);
  }

  static void assertProblem(HttpResponse<byte[]> r, int status, String type) {
    assertThat(r.statusCode()).isEqualTo(status);
    assertThat(header(r, "Content-Type")).startsWith("application/problem+json");
    String body = text(r);
    assertThat(body).contains("\"type\":\"" + type + "\"", "\"title\":", "\"status\":" + status, "\"detail\":");
    assertThat(body).doesNotContain("Exception", "\tat ", "dev.idem.");
    assertThat(header(r, "Idempotent-Replayed")).isNull();
  }

  // ---- replay -------------------------------------------------------------------------------

  @Test
  void replaysCreatedWithLocationAndEtagByteForByte() throws Exception {
    HttpResponse<byte[]> first = postJson("/notes", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"", "{\"title\":\"a\"}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(header(first, "Location")).isEqualTo("/notes/1");
    assertThat(header(first, "ETag")).isEqualTo("\"v1\"");
    assertThat(header(first, "Set-Cookie")).startsWith("session=s1");
    assertThat(header(first, "X-Not-Replayed")).isEqualTo("debug-1");
    assertThat(header(first, "Idempotent-Replayed")).isNull();
    assertThat(text(first)).isEqualTo("{\"id\":1,\"user\":\"\",\"key\":\"8e03978e-40d5-43e8-bc93-6894a57f9324\",\"body\":\"{\\\"title\\\":\\\"a\\\"}\"}");

    HttpResponse<byte[]> replay = postJson("/notes", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"", "{\"title\":\"a\"}");
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(header(replay, "Location")).isEqualTo("/notes/1");
    assertThat(header(replay, "ETag")).isEqualTo("\"v1\"");
    assertThat(header(replay, "Cache-Control")).isEqualTo("no-store");
    assertThat(header(replay, "Content-Type")).isEqualTo(header(first, "Content-Type"));
    assertThat(header(replay, "Content-Length")).isEqualTo(Integer.toString(first.body().length));
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(header(replay, "X-Not-Replayed")).isNull();
    assertThat(app.calls("POST /notes")).isEqualTo(1);
    assertThat(store.size()).isEqualTo(1);
  }

  @Test
  void setCookieIsNeverReplayed() throws Exception {
    HttpResponse<byte[]> first = postJson("/notes", "cookie-key", "{}");
    assertThat(first.headers().allValues("Set-Cookie")).hasSize(1);
    HttpResponse<byte[]> replay = postJson("/notes", "cookie-key", "{}");
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(replay.headers().allValues("Set-Cookie")).isEmpty();
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void equivalentJsonIsTheSameRequest() throws Exception {
    HttpResponse<byte[]> first = postJson("/notes", "json-key", "{\"a\":1,\"b\":[true,null]}");
    HttpResponse<byte[]> replay = postJson("/notes", "json-key", " { \"b\" : [ true , null ] , \"a\" : 1.0 } ");
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void storedNotFoundIsReplayedAsNotFound() throws Exception {
    HttpResponse<byte[]> first = post("/missing", "k404", "text/plain", "x");
    assertThat(first.statusCode()).isEqualTo(404);
    HttpResponse<byte[]> replay = post("/missing", "k404", "text/plain", "x");
    assertThat(replay.statusCode()).isEqualTo(404);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(text(replay)).isEqualTo("{\"error\":\"no note 1\"}");
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /missing")).isEqualTo(1);
    assertThat(store.size()).isEqualTo(1);
  }

  @Test
  void sendErrorIsCapturedAndReplayedAsProblem() throws Exception {
    HttpResponse<byte[]> first = post("/gone", "k410", null, "");
    assertThat(first.statusCode()).isEqualTo(410);
    assertThat(header(first, "Content-Type")).isEqualTo("application/problem+json");
    assertThat(text(first)).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Gone\",\"status\":410,\"detail\":\"note 1 was deleted\"}");
    HttpResponse<byte[]> replay = post("/gone", "k410", null, "");
    assertThat(replay.statusCode()).isEqualTo(410);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(header(replay, "Content-Type")).isEqualTo("application/problem+json");
    assertThat(app.calls("POST /gone")).isEqualTo(1);
  }

  @Test
  void sendRedirectIsCapturedAndReplayed() throws Exception {
    HttpResponse<byte[]> first = post("/redirect", "k302", null, "");
    assertThat(first.statusCode()).isEqualTo(302);
    assertThat(header(first, "Location")).endsWith("/notes/1");
    HttpResponse<byte[]> replay = post("/redirect", "k302", null, "");
    assertThat(replay.statusCode()).isEqualTo(302);
    assertThat(header(replay, "Location")).isEqualTo(header(first, "Location"));
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /redirect")).isEqualTo(1);
  }

  @Test
  void streamedBodyIsReplayedIdentically() throws Exception {
    HttpResponse<byte[]> first = post("/stream", "kstream", null, "");
    assertThat(first.statusCode()).isEqualTo(200);
    StringBuilder expected = new StringBuilder();
    for (int i = 0; i < 200; i++) {
      expected.append("chunk ").append(i).append(" of run 1 \u00e9\u20ac ").append("x".repeat(i % 37)).append('\n');
    }
    assertThat(first.body()).isEqualTo(expected.toString().getBytes(StandardCharsets.UTF_8));
    assertThat(header(first, "Content-Type")).isEqualToIgnoringCase("text/plain;charset=UTF-8");
    HttpResponse<byte[]> replay = post("/stream", "kstream", null, "");
    assertThat(replay.statusCode()).isEqualTo(200);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(header(replay, "Content-Type")).isEqualTo(header(first, "Content-Type"));
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /stream")).isEqualTo(1);
  }

  @Test
  void quotedAndBareKeysAreTheSameKey() throws Exception {
    HttpResponse<byte[]> first = postJson("/notes", "\"same-key\"", "{}");
    HttpResponse<byte[]> bare = postJson("/notes", "same-key", "{}");
    assertThat(header(bare, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(bare.body()).isEqualTo(first.body());
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void headerNameIsMatchedCaseInsensitively() throws Exception {
    HttpRequest lower = server.request("/notes").header("idempotency-key", "case-key")
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}")).build();
    HttpRequest upper = server.request("/notes").header("IDEMPOTENCY-KEY", "case-key")
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}")).build();
    HttpResponse<byte[]> first = server.send(lower);
    HttpResponse<byte[]> second = server.send(upper);
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(header(second, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void escapedQuotedKeyIsDecoded() throws Exception {
    HttpResponse<byte[]> first = postJson("/notes", "\"a\\\"b\\\\c\"", "{}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(text(first)).contains("\"key\":\"a\\\"b\\\\c\"");
  }

  @Test
  void twoPrincipalsWithOneKeyGetTheirOwnResults() throws Exception {
    HttpRequest.Builder alice = server.request("/notes").header("Idempotency-Key", "shared")
        .header(TestServer.USER_HEADER, "alice").header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}"));
    HttpRequest.Builder bob = server.request("/notes").header("Idempotency-Key", "shared")
        .header(TestServer.USER_HEADER, "bob").header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}"));
    HttpResponse<byte[]> a1 = server.send(alice.build());
    HttpResponse<byte[]> b1 = server.send(bob.build());
    assertThat(a1.statusCode()).isEqualTo(201);
    assertThat(b1.statusCode()).isEqualTo(201);
    assertThat(header(b1, "Idempotent-Replayed")).isNull();
    assertThat(text(a1)).contains("\"user\":\"alice\"");
    assertThat(text(b1)).contains("\"user\":\"bob\"");
    assertThat(app.calls("POST /notes")).isEqualTo(2);

    HttpResponse<byte[]> a2 = server.send(alice.build());
    HttpResponse<byte[]> b2 = server.send(bob.build());
    assertThat(a2.body()).isEqualTo(a1.body());
    assertThat(b2.body()).isEqualTo(b1.body());
    assertThat(header(a2, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(header(b2, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /notes")).isEqualTo(2);
    assertThat(store.size()).isEqualTo(2);
  }

  @Test
  void anAccountNamedAnonymousDoesNotShareTheAnonymousScope() throws Exception {
    HttpResponse<byte[]> anonymous = postJson("/notes", "anon-key", "{}");
    HttpResponse<byte[]> named = server.send(server.request("/notes").header("Idempotency-Key", "anon-key")
        .header(TestServer.USER_HEADER, "anonymous").header("Content-Type", "application/json")
        .POST(BodyPublishers.ofString("{}")).build());
    assertThat(header(named, "Idempotent-Replayed")).isNull();
    assertThat(named.body()).isNotEqualTo(anonymous.body());
    assertThat(app.calls("POST /notes")).isEqualTo(2);
  }

  // ---- conflicts ----------------------------------------------------------------------------

  @Test
  void reusedKeyWithAnotherPayloadIs422() throws Exception {
    assertThat(postJson("/notes", "reuse", "{\"title\":\"a\"}").statusCode()).isEqualTo(201);
    HttpResponse<byte[]> reused = postJson("/notes", "reuse", "{\"title\":\"b\"}");
    assertProblem(reused, 422, IdempotencyFilter.PROBLEM_KEY_REUSED);
    assertThat(app.calls("POST /notes")).isEqualTo(1);
    assertThat(store.size()).isEqualTo(1);
  }

  @Test
  void reusedKeyOnAnotherResourceOfAWildcardRouteIs422() throws Exception {
    HttpRequest one = server.request("/notes/1").header("Idempotency-Key", "patch-key")
        .header("Content-Type", "application/json").method("PATCH", BodyPublishers.ofString("{\"done\":true}")).build();
    HttpRequest two = server.request("/notes/2").header("Idempotency-Key", "patch-key")
        .header("Content-Type", "application/json").method("PATCH", BodyPublishers.ofString("{\"done\":true}")).build();
    assertThat(server.send(one).statusCode()).isEqualTo(201);
    assertProblem(server.send(two), 422, IdempotencyFilter.PROBLEM_KEY_REUSED);
    assertThat(app.calls("PATCH /notes/2")).isZero();
  }

  @Test
  void concurrentDuplicateGets409WithRetryAfter() throws Exception {
    app.started = new CountDownLatch(1);
    app.release = new CountDownLatch(1);
    CompletableFuture<HttpResponse<byte[]>> first = server.client.sendAsync(
        server.request("/slow").header("Idempotency-Key", "busy").POST(BodyPublishers.ofString("x")).build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(app.started.await(10, TimeUnit.SECONDS)).isTrue();

    HttpResponse<byte[]> duplicate = post("/slow", "busy", null, "x");
    assertProblem(duplicate, 409, IdempotencyFilter.PROBLEM_IN_PROGRESS);
    String retryAfter = header(duplicate, "Retry-After");
    assertThat(retryAfter).matches("[0-9]+");
    assertThat(Integer.parseInt(retryAfter)).isBetween(1, 30);
    assertThat(app.calls("POST /slow")).isEqualTo(1);

    app.release.countDown();
    HttpResponse<byte[]> done = first.get(20, TimeUnit.SECONDS);
    assertThat(done.statusCode()).isEqualTo(201);
    HttpResponse<byte[]> replay = post("/slow", "busy", null, "x");
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.body()).isEqualTo(done.body());
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /slow")).isEqualTo(1);
  }

  // ---- malformed keys -----------------------------------------------------------------------

  @ParameterizedTest(name = "[{index}] key <{0}>")
  @ValueSource(strings = {
      "", "\"\"",                                  // empty
      "ab\tcd", "\"ab\tcd\"",                      // control character
      "\"abc", "\"a\"b\"", "\"a\\x\"", "ab\"c",    // bad quoting
      "a b", "a,b", "\"abc\";p=1", "a\\b"})
  void malformedKeyIs400(String key) throws Exception {
    HttpResponse<byte[]> r = postJson("/notes", key, "{}");
    assertProblem(r, 400, IdempotencyFilter.PROBLEM_KEY_MALFORMED);
    assertThat(app.totalCalls()).isZero();
    assertThat(store.size()).isZero();
  }

  /** java.net.http turns non-ASCII header characters into '?', so these go over a plain socket. */
  @ParameterizedTest(name = "[{index}] {0}")
  @ValueSource(strings = {"UTF-8", "ISO-8859-1"})
  void nonAsciiKeyIs400(String charset) throws Exception {
    for (String key : new String[] {"caf\u00e9", "\"caf\u00e9\""}) {
      byte[] line = ("Idempotency-Key: " + key).getBytes(charset);
      TestServer.RawResponse r = server.rawPost("/notes", line, "{}".getBytes(StandardCharsets.US_ASCII));
      assertThat(r.status()).isEqualTo(400);
      assertThat(r.header("Content-Type")).isEqualTo("application/problem+json");
      assertThat(new String(r.body(), StandardCharsets.UTF_8))
          .contains(IdempotencyFilter.PROBLEM_KEY_MALFORMED, "non-ASCII character U+00");
    }
    assertThat(app.totalCalls()).isZero();
    assertThat(store.size()).isZero();
  }

  @Test
  void keyOf256CharactersIs400And255IsAccepted() throws Exception {
    assertProblem(postJson("/notes", "k".repeat(256), "{}"), 400, IdempotencyFilter.PROBLEM_KEY_MALFORMED);
    assertProblem(postJson("/notes", "\"" + "k".repeat(256) + "\"", "{}"), 400, IdempotencyFilter.PROBLEM_KEY_MALFORMED);
    assertThat(app.totalCalls()).isZero();
    assertThat(postJson("/notes", "k".repeat(255), "{}").statusCode()).isEqualTo(201);
    assertThat(postJson("/notes", "\"" + "k".repeat(255) + "\"", "{}").statusCode()).isEqualTo(201);
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void twoKeyFieldsAre400() throws Exception {
    HttpResponse<byte[]> r = server.send(server.request("/notes").header("Idempotency-Key", "one")
        .header("Idempotency-Key", "two").header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}")).build());
    assertProblem(r, 400, IdempotencyFilter.PROBLEM_KEY_MALFORMED);
    assertThat(app.totalCalls()).isZero();
  }

  @Test
  void invalidJsonDeclaredAsJsonIs400() throws Exception {
    HttpResponse<byte[]> r = postJson("/notes", "bad-json", "{\"title\":");
    assertProblem(r, 400, IdempotencyFilter.PROBLEM_PAYLOAD_INVALID);
    assertThat(app.totalCalls()).isZero();
    assertThat(store.size()).isZero();
  }

  @Test
  void emptyBodyDeclaredAsJsonIsNoPayloadNotInvalidJson() throws Exception {
    HttpResponse<byte[]> first = postJson("/notes", "empty-json", "");
    assertThat(first.statusCode()).isEqualTo(201);
    HttpResponse<byte[]> replay = postJson("/notes", "empty-json", "");
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  // ---- required and optional keys, routes ---------------------------------------------------

  @Test
  void missingRequiredKeyIs400() throws Exception {
    HttpResponse<byte[]> r = postJson("/required", null, "{}");
    assertProblem(r, 400, IdempotencyFilter.PROBLEM_KEY_MISSING);
    assertThat(app.totalCalls()).isZero();
    assertThat(postJson("/required", "present", "{}").statusCode()).isEqualTo(201);
  }

  @Test
  void requestWithoutOptionalKeyIsNotDeduplicated() throws Exception {
    HttpResponse<byte[]> first = postJson("/notes", null, "{}");
    HttpResponse<byte[]> second = postJson("/notes", null, "{}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(header(second, "Idempotent-Replayed")).isNull();
    assertThat(second.body()).isNotEqualTo(first.body());
    assertThat(app.calls("POST /notes")).isEqualTo(2);
    assertThat(store.size()).isZero();
  }

  @Test
  void getIsNotConfiguredAndPassesThroughUntouched() throws Exception {
    HttpRequest get = server.request("/notes").header("Idempotency-Key", "\"get-key\"").GET().build();
    HttpResponse<byte[]> first = server.send(get);
    HttpResponse<byte[]> second = server.send(get);
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(text(first)).isEqualTo("GET /notes run 1");
    assertThat(text(second)).isEqualTo("GET /notes run 2");
    assertThat(header(second, "Idempotent-Replayed")).isNull();
    assertThat(header(second, "Set-Cookie")).startsWith("plain=p2");
    assertThat(app.calls("GET /notes")).isEqualTo(2);
    assertThat(store.size()).isZero();
  }

  @Test
  void malformedKeyOnAnUnconfiguredMethodIsIgnored() throws Exception {
    HttpResponse<byte[]> r = server.send(server.request("/notes").header("Idempotency-Key", "\"broken").GET().build());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(app.calls("GET /notes")).isEqualTo(1);
  }

  // ---- failures -----------------------------------------------------------------------------

  @Test
  void handlerThatThrowsReleasesTheClaimSoARetryRuns() throws Exception {
    HttpResponse<byte[]> failed = post("/boom", "boom-key", "text/plain", "x");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(header(failed, "Idempotent-Replayed")).isNull();
    assertThat(store.size()).isZero();

    HttpResponse<byte[]> retry = post("/boom", "boom-key", "text/plain", "x");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(text(retry)).isEqualTo("created on run 2");
    HttpResponse<byte[]> replay = post("/boom", "boom-key", "text/plain", "x");
    assertThat(text(replay)).isEqualTo("created on run 2");
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.calls("POST /boom")).isEqualTo(2);
    assertThat(store.size()).isEqualTo(1);
  }

  /**
   * A handler that lets the HTTP client's unknown outcome of a call to another service escape fails
   * as with any exception of its own: 500, the claim released, a retry runs. Since there is one
   * {@code OutcomeUnknownException} it must not be read as the filter's own unknown outcome (503
   * outcome-unknown with the client's Retry-After) nor as the store's failure.
   */
  @Test
  void aClientsUnknownOutcomeEscapingTheHandlerIsTheHandlersFailureNotA503() throws Exception {
    HttpResponse<byte[]> failed = post("/downstream-unknown", "downstream-key", "text/plain", "x");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(header(failed, "Retry-After")).isNull();
    assertThat(store.size()).isZero();
    HttpResponse<byte[]> retry = post("/downstream-unknown", "downstream-key", "text/plain", "x");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(app.calls("POST /downstream-unknown")).isEqualTo(2);
  }

  @Test
  void flushedOutputDoesNotLeakBeforeTheHandlerFinishes() throws Exception {
    HttpResponse<byte[]> failed = post("/flush-then-throw", "flush-key", null, "");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(text(failed)).doesNotStartWith("partial");
    assertThat(store.size()).isZero();
    HttpResponse<byte[]> retry = post("/flush-then-throw", "flush-key", null, "");
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(text(retry)).isEqualTo("partial");
    assertThat(app.calls("POST /flush-then-throw")).isEqualTo(2);
  }

  @Test
  void serverErrorIsReleasedByTheStandardPolicy() throws Exception {
    HttpResponse<byte[]> first = post("/fail500", "k500", null, "");
    HttpResponse<byte[]> second = post("/fail500", "k500", null, "");
    assertThat(first.statusCode()).isEqualTo(500);
    assertThat(text(first)).isEqualTo("server error on run 1");
    assertThat(text(second)).isEqualTo("server error on run 2");
    assertThat(header(second, "Idempotent-Replayed")).isNull();
    assertThat(store.size()).isZero();
  }

  // ---- request bodies -----------------------------------------------------------------------

  @Test
  void bodyAnnouncedLargerThanTheLimitIs413() throws Exception {
    byte[] big = new byte[LIMIT + 1];
    HttpResponse<byte[]> r = server.send(server.request("/echo").header("Idempotency-Key", "big")
        .header("Content-Type", "application/octet-stream").POST(BodyPublishers.ofByteArray(big)).build());
    assertProblem(r, 413, IdempotencyFilter.PROBLEM_BODY_TOO_LARGE);
    assertThat(text(r)).contains("Content-Length");
    assertThat(app.totalCalls()).isZero();
    assertThat(store.size()).isZero();
  }

  @Test
  void chunkedBodyLargerThanTheLimitIs413() throws Exception {
    byte[] big = new byte[4 * LIMIT];
    HttpRequest request = server.request("/echo").header("Idempotency-Key", "big-chunked")
        .header("Content-Type", "application/octet-stream")
        .POST(BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(big))).build();
    assertThat(request.bodyPublisher().orElseThrow().contentLength()).isEqualTo(-1); // chunked
    HttpResponse<byte[]> r = server.send(request);
    assertProblem(r, 413, IdempotencyFilter.PROBLEM_BODY_TOO_LARGE);
    assertThat(app.totalCalls()).isZero();
    assertThat(store.size()).isZero();
  }

  @Test
  void bodyOfExactlyTheLimitIsAcceptedAndReplayedToTheHandler() throws Exception {
    byte[] body = new byte[LIMIT];
    Arrays.fill(body, (byte) 'z');
    body[0] = (byte) 0xFF;
    HttpRequest chunked = server.request("/echo").header("Idempotency-Key", "limit")
        .header("Content-Type", "application/octet-stream")
        .POST(BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))).build();
    HttpResponse<byte[]> r = server.send(chunked);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo(body); // the handler read the buffered bytes
    HttpResponse<byte[]> replay = server.send(chunked);
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(replay.body()).isEqualTo(body);
    assertThat(app.calls("POST /echo")).isEqualTo(1);
  }

  @Test
  void formParametersAreReadableFromTheBufferedBody() throws Exception {
    HttpResponse<byte[]> first = post("/form?lang=en", "form-key", "application/x-www-form-urlencoded", "title=Hello+W%C3%B6rld&x=1");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(text(first)).isEqualTo("title=Hello Wörld run=1");
    HttpResponse<byte[]> replay = post("/form?lang=en", "form-key", "application/x-www-form-urlencoded", "title=Hello+W%C3%B6rld&x=1");
    assertThat(text(replay)).isEqualTo("title=Hello Wörld run=1");
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
  }
}
