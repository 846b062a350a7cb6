package dev.idem.servlet;

import static dev.idem.servlet.IdempotencyFilterTest.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.StoredResponseCodec;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every answer to a request with a well-formed key carries the {@code Idempotency-Key} field back,
 * as the request sent it: first answers, replays and the filter's refusals alike.
 */
class IdempotencyFilterKeyEchoTest {

  InMemoryLeaseStore store;
  TestApp app;
  TestServer server;
  IdempotencyFilterConfig config;

  @BeforeEach
  void start() throws Exception {
    store = new InMemoryLeaseStore();
    app = new TestApp();
    config = IdempotencyFilterConfig.builder(store)
        .optional("POST", "/**")
        .maxBodyBytes(1024)
        .build();
    server = new TestServer(config, app);
  }

  @AfterEach
  void stop() {
    app.release.countDown();
    server.close();
  }

  HttpResponse<byte[]> post(String path, String key, String body) throws Exception {
    return server.send(server.request(path).header("Idempotency-Key", key).header("Content-Type", "application/json")
        .POST(BodyPublishers.ofString(body, StandardCharsets.UTF_8)).build());
  }

  static List<String> keys(HttpResponse<byte[]> r) {
    return r.headers().allValues("Idempotency-Key");
  }

  @Test
  void keyIsEchoedOnTheFirstAnswerTheReplayAndTheRefusals() throws Exception {
    String sent = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"";
    HttpResponse<byte[]> first = post("/notes", sent, "{\"title\":\"a\"}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(keys(first)).containsExactly(sent); // as sent, quotes included

    HttpResponse<byte[]> replay = post("/notes", sent, "{\"title\":\"a\"}");
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(keys(replay)).containsExactly(sent);

    // the same key spelled bare: the replay echoes this request's field, not the first one's
    HttpResponse<byte[]> bare = post("/notes", "8e03978e-40d5-43e8-bc93-6894a57f9324", "{\"title\":\"a\"}");
    assertThat(bare.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(keys(bare)).containsExactly("8e03978e-40d5-43e8-bc93-6894a57f9324");

    HttpResponse<byte[]> reused = post("/notes", sent, "{\"title\":\"b\"}");
    assertProblem(reused, 422, IdempotencyFilter.PROBLEM_KEY_REUSED);
    assertThat(keys(reused)).containsExactly(sent);

    HttpResponse<byte[]> tooLarge = post("/notes", "big", "\"" + "x".repeat(2000) + "\"");
    assertProblem(tooLarge, 413, IdempotencyFilter.PROBLEM_BODY_TOO_LARGE);
    assertThat(keys(tooLarge)).containsExactly("big");

    HttpResponse<byte[]> invalid = post("/notes", "bad-json", "{");
    assertProblem(invalid, 400, IdempotencyFilter.PROBLEM_PAYLOAD_INVALID);
    assertThat(keys(invalid)).containsExactly("bad-json");
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void keyIsEchoedOnTheInProgressConflict() throws Exception {
    app.started = new CountDownLatch(1);
    app.release = new CountDownLatch(1);
    CompletableFuture<HttpResponse<byte[]>> first = server.client.sendAsync(
        server.request("/slow").header("Idempotency-Key", "busy").POST(BodyPublishers.ofString("x")).build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(app.started.await(10, TimeUnit.SECONDS)).isTrue();

    HttpResponse<byte[]> duplicate = server.send(server.request("/slow").header("Idempotency-Key", "busy")
        .POST(BodyPublishers.ofString("x")).build());
    assertProblem(duplicate, 409, IdempotencyFilter.PROBLEM_IN_PROGRESS);
    assertThat(keys(duplicate)).containsExactly("busy");

    app.release.countDown();
    assertThat(keys(first.get(20, TimeUnit.SECONDS))).containsExactly("busy");
  }

  @Test
  void malformedOrMissingKeyIsNotEchoed() throws Exception {
    HttpResponse<byte[]> malformed = post("/notes", "a b", "{}");
    assertProblem(malformed, 400, IdempotencyFilter.PROBLEM_KEY_MALFORMED);
    assertThat(keys(malformed)).isEmpty();

    HttpResponse<byte[]> unkeyed = server.send(server.request("/notes").header("Content-Type", "application/json")
        .POST(BodyPublishers.ofString("{}")).build());
    assertThat(unkeyed.statusCode()).isEqualTo(201);
    assertThat(keys(unkeyed)).isEmpty();
  }

  @Test
  void keySetByTheHandlerIsNeitherSentTwiceNorStored() throws Exception {
    HttpResponse<byte[]> first = post("/sets-key", "k-handler", "{}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(keys(first)).containsExactly("k-handler");

    Scope scope = Scope.of(Scope.principalPart(null, config.anonymousPrincipal()), "POST /**");
    StoredResponse stored = StoredResponseCodec.decode(store.storedResponseBytes(scope, IdempotencyKey.of("k-handler")));
    assertThat(stored.headers().keySet()).noneMatch(name -> name.equalsIgnoreCase("Idempotency-Key"));

    HttpResponse<byte[]> replay = post("/sets-key", "k-handler", "{}");
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(keys(replay)).containsExactly("k-handler");
    assertThat(app.calls("POST /sets-key")).isEqualTo(1);
  }

  @Test
  void replayNeverSendsAKeyStoredInTheRecord() throws Exception {
    assertThat(post("/notes", "k-mine", "{}").statusCode()).isEqualTo(201);
    // a record written by another version or configuration, carrying another key's field
    Scope scope = Scope.of(Scope.principalPart(null, config.anonymousPrincipal()), "POST /**");
    StoredResponse planted = StoredResponse.builder(201).header("Idempotency-Key", "k-someone-else")
        .header("Content-Type", "text/plain").body("planted").build();
    assertThat(store.replaceStoredResponseBytes(scope, IdempotencyKey.of("k-mine"), StoredResponseCodec.encode(planted))).isTrue();

    HttpResponse<byte[]> replay = post("/notes", "k-mine", "{}");
    assertThat(new String(replay.body(), StandardCharsets.UTF_8)).isEqualTo("planted");
    assertThat(keys(replay)).containsExactly("k-mine");
  }

  @Test
  void idempotencyKeyCannotBeConfiguredAsAReplayedHeader() {
    assertThatThrownBy(() -> IdempotencyFilterConfig.builder(store).replayedHeaders(List.of("Idempotency-Key")))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
