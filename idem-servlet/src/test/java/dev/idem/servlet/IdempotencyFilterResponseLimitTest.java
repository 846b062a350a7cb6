package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link IdempotencyFilterConfig#maxResponseBytes()} on embedded Jetty 12 with {@link
 * InMemoryLeaseStore}: answers up to the limit are stored and replayed, longer ones reach the client
 * whole, streamed, and leave the key completed without their body, so a retry gets a problem and
 * never runs the handler again. {@link IdempotencyFilterLargeAnswerStoresTest} runs the sizes on
 * every store.
 */
class IdempotencyFilterResponseLimitTest {

  /** Larger than Jetty's 32 KiB output buffer, so an overflow really streams. */
  static final int CAP = 64 * 1024;

  InMemoryLeaseStore store;
  TestApp app;
  TestServer server;
  /** WARNING records of the filter's logger (System.Logger, on java.util.logging here). */
  final List<LogRecord> warnings = Collections.synchronizedList(new ArrayList<>());
  final Logger filterLog = Logger.getLogger(IdempotencyFilter.class.getName());
  final Handler capture = new Handler() {
    @Override
    public void publish(LogRecord record) {
      if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
        warnings.add(record);
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void start() throws Exception {
    filterLog.addHandler(capture);
    store = new InMemoryLeaseStore();
    app = new TestApp();
    server = new TestServer(IdempotencyFilterConfig.builder(store).maxResponseBytes(CAP).build(), app);
  }

  @AfterEach
  void stop() {
    filterLog.removeHandler(capture);
    app.release.countDown();
    server.close();
  }

  HttpRequest sized(String key, String mode, int bytes) {
    return server.request("/sized?bytes=" + bytes + "&mode=" + mode).header("Idempotency-Key", key)
        .POST(BodyPublishers.ofString("x")).build();
  }

  static String header(HttpResponse<?> r, String name) {
    return r.headers().firstValue(name).orElse(null);
  }

  @ParameterizedTest(name = "[{index}] {0}, {1} bytes")
  @CsvSource({"stream, 65535", "stream, 65536", "writer, 65535", "writer, 65536", "stream, 0"})
  void responseUpToTheCapIsStoredAndReplayedByteForByte(String mode, int bytes) throws Exception {
    HttpResponse<byte[]> first = server.send(sized("under-" + mode + bytes, mode, bytes));
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo(TestApp.sized(1, bytes));
    assertThat(header(first, "Content-Length")).isEqualTo(Integer.toString(bytes));
    assertThat(store.size()).isEqualTo(1);

    HttpResponse<byte[]> replay = server.send(sized("under-" + mode + bytes, mode, bytes));
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(header(replay, "Content-Length")).isEqualTo(Integer.toString(bytes));
    assertThat(header(replay, "Location")).isEqualTo("/sized/1");
    assertThat(header(replay, "Content-Type")).isEqualTo(header(first, "Content-Type"));
    assertThat(app.calls("POST /sized")).isEqualTo(1);
    assertThat(warnings).isEmpty();
  }

  /**
   * Asserts the problem a retry of an answer over the cap gets, and that nothing ran again. Was 500,
   * which retrying clients resend; a 422 tells them not to.
   */
  static void assertTooLargeToReplay(HttpResponse<byte[]> retry, int originalStatus, long originalBytes, String location) {
    assertThat(retry.statusCode()).isEqualTo(422);
    assertThat(header(retry, "Content-Type")).startsWith("application/problem+json");
    assertThat(header(retry, "Idempotent-Replayed")).isNull();
    String json = new String(retry.body(), StandardCharsets.UTF_8);
    assertThat(json).contains("\"type\":\"urn:idem:problem:response-too-large-to-replay\"",
        "\"status\":422", "\"originalStatus\":" + originalStatus, "\"originalBodyBytes\":" + originalBytes,
        "answered with status " + originalStatus);
    if (location != null) {
      assertThat(json).contains("\"originalLocation\":\"" + location + "\"");
    }
  }

  /**
   * The fault: with the default 1 MiB cap, a handler that answered 2 MiB ran twice for one key,
   * because an answer over the cap released its claim. Now the answer still reaches the client
   * whole, streamed, but the key stays completed with a record of it (status, replayed header
   * fields, length; no body), and a retry gets a problem instead of a second run. {@code CAP + 1}
   * in writer mode overflows only when the filter encodes the writer's last characters after the
   * handler returned; the larger sizes overflow while the handler writes.
   */
  @ParameterizedTest(name = "[{index}] {0}, {1} bytes")
  @CsvSource({"stream, 65537", "stream, 262267", "writer, 65537", "writer, 262267"})
  void answerLargerThanTheCapNeverRunsTheEffectTwice(String mode, int bytes) throws Exception {
    String key = "over-" + mode + "-" + bytes;
    HttpResponse<byte[]> first = server.send(sized(key, mode, bytes));
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo(TestApp.sized(1, bytes));
    assertThat(header(first, "Location")).isEqualTo("/sized/1");
    assertThat(header(first, "X-Run")).isEqualTo("1");
    assertThat(header(first, "Set-Cookie")).startsWith("sized=c1");
    assertThat(header(first, "Content-Type")).startsWith(mode.equals("writer") ? "text/plain" : "application/octet-stream");
    assertThat(header(first, "Idempotent-Replayed")).isNull();
    assertThat(store.size()).as("the key stays completed").isEqualTo(1);

    assertThat(warnings).hasSize(1);
    String message = warnings.get(0).getMessage();
    assertThat(message).contains("POST /**", "status 201", bytes + " bytes", "maxResponseBytes (" + CAP + " bytes)",
        "does not run the operation again");
    assertThat(message).as("logs carry no keys").doesNotContain(key);

    for (int attempt = 0; attempt < 2; attempt++) {
      HttpResponse<byte[]> retry = server.send(sized(key, mode, bytes));
      assertTooLargeToReplay(retry, 201, bytes, "/sized/1");
    }
    assertThat(app.calls("POST /sized")).as("the effect ran once").isEqualTo(1);
  }

  /**
   * The record of an answer over the cap is stored or released by the response policy on its
   * status, as a short answer would be: a 503 is released (a retry runs again, the failure was
   * transient); a 422 is kept.
   */
  @Test
  void anAnswerOverTheCapFollowsTheResponsePolicyOnItsStatus() throws Exception {
    HttpRequest unavailable = server.request("/sized?bytes=" + (CAP + 1) + "&mode=stream&status=503")
        .header("Idempotency-Key", "over-503").POST(BodyPublishers.ofString("x")).build();
    HttpResponse<byte[]> first = server.send(unavailable);
    assertThat(first.statusCode()).isEqualTo(503);
    assertThat(first.body()).isEqualTo(TestApp.sized(1, CAP + 1));
    assertThat(store.size()).as("released, as a short 503 is").isZero();
    assertThat(server.send(unavailable).body()).as("the retry runs").isEqualTo(TestApp.sized(2, CAP + 1));

    HttpRequest invalid = server.request("/sized?bytes=" + (CAP + 1) + "&mode=stream&status=422")
        .header("Idempotency-Key", "over-422").POST(BodyPublishers.ofString("x")).build();
    assertThat(server.send(invalid).statusCode()).isEqualTo(422);
    assertThat(store.size()).isEqualTo(1);
    assertTooLargeToReplay(server.send(invalid), 422, CAP + 1, "/sized/3");
    assertThat(app.calls("POST /sized")).isEqualTo(3);
  }

  /**
   * A handler that throws after part of its answer streamed to the client: the client saw the
   * status and the effect happened as far as it can tell, so the key stays completed (never free
   * for a second run) and the exchange is aborted.
   */
  @Test
  void aHandlerThatFailsAfterPartOfItsAnswerWasSentNeverRunsAgain() throws Exception {
    int bytes = 3 * CAP;
    HttpRequest request = server.request("/sized?bytes=" + bytes + "&mode=stream&fail=true")
        .header("Idempotency-Key", "over-then-fail").POST(BodyPublishers.ofString("x")).build();
    try {
      HttpResponse<byte[]> first = server.send(request);
      assertThat(first.statusCode()).isEqualTo(201); // the head was sent before the failure
    } catch (IOException aborted) {
      // the container aborted the half-sent answer: what a client usually sees
    }
    assertThat(store.size()).isEqualTo(1);
    assertTooLargeToReplay(server.send(request), 201, bytes, "/sized/1");
    assertThat(app.calls("POST /sized")).isEqualTo(1);
  }

  /**
   * A handler that throws while its answer is still held (nothing reached the client) releases the
   * claim, as contract rule 6 says for exceptions: the client got the container's error, and a
   * retry runs again.
   */
  @Test
  void aHandlerThatFailsBeforeAnythingWasSentIsReleased() throws Exception {
    HttpRequest request = server.request("/sized?bytes=10&mode=stream&fail=true")
        .header("Idempotency-Key", "fail-held").POST(BodyPublishers.ofString("x")).build();
    assertThat(server.send(request).statusCode()).isEqualTo(500);
    assertThat(store.size()).isZero();
    assertThat(server.send(request).statusCode()).isEqualTo(500);
    assertThat(app.calls("POST /sized")).isEqualTo(2);
  }

  @Test
  void theTooLargeProblemFollowsTheConfiguredProblemTypes() throws Exception {
    server.close();
    server = new TestServer(IdempotencyFilterConfig.builder(store).maxResponseBytes(CAP).aboutBlankProblemTypes().build(), app);
    server.send(sized("blank", "stream", CAP + 1));
    HttpResponse<byte[]> retry = server.send(sized("blank", "stream", CAP + 1));
    assertThat(retry.statusCode()).isEqualTo(422);
    String json = new String(retry.body(), StandardCharsets.UTF_8);
    assertThat(json).doesNotContain("\"type\"").contains("\"title\":\"Unprocessable Content\"", "\"originalStatus\":201");

    server.close();
    server = new TestServer(IdempotencyFilterConfig.builder(store).maxResponseBytes(CAP)
        .problemTypeBase(URI.create("https://api.example.com/problems/")).build(), app);
    assertThat(new String(server.send(sized("blank", "stream", CAP + 1)).body(), StandardCharsets.UTF_8))
        .contains("\"type\":\"https://api.example.com/problems/response-too-large-to-replay\"");
    assertThat(app.calls("POST /sized")).isEqualTo(1);
  }

  /**
   * Past the cap the filter stops buffering: the head and the first bytes reach the client while
   * the handler is still running (it waits for {@code release}), which a filter that held the
   * whole answer could not do.
   */
  @ParameterizedTest(name = "[{index}] {0}")
  @CsvSource({"stream", "writer"})
  void pastTheCapTheResponseStreamsWhileTheHandlerRuns(String mode) throws Exception {
    app.started = new CountDownLatch(1);
    app.release = new CountDownLatch(1);
    int pause = 2 * CAP;
    int bytes = 3 * CAP + 17;
    HttpRequest request = server.request("/sized?bytes=" + bytes + "&mode=" + mode + "&pause=" + pause)
        .header("Idempotency-Key", "streaming-" + mode).POST(BodyPublishers.ofString("x")).build();
    CompletableFuture<HttpResponse<InputStream>> pending = server.client.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream());
    assertThat(app.started.await(10, TimeUnit.SECONDS)).isTrue();

    HttpResponse<InputStream> response = pending.get(10, TimeUnit.SECONDS); // the head arrived before the handler ended
    assertThat(response.statusCode()).isEqualTo(201);
    assertThat(header(response, "Location")).isEqualTo("/sized/1");
    assertThat(header(response, "Content-Length")).as("the length is not known when streaming").isNull();
    InputStream in = response.body();
    byte[] head = in.readNBytes(pause); // every byte written before the pause, flushed through
    byte[] expected = TestApp.sized(1, bytes);
    assertThat(head).isEqualTo(Arrays.copyOf(expected, pause));
    assertThat(app.release.getCount()).as("the handler is still waiting").isEqualTo(1);

    app.release.countDown();
    byte[] rest = in.readAllBytes();
    assertThat(rest).isEqualTo(Arrays.copyOfRange(expected, pause, bytes));
    HttpResponse<byte[]> retry = server.send(request);
    assertTooLargeToReplay(retry, 201, bytes, "/sized/1");
    assertThat(app.calls("POST /sized")).isEqualTo(1);
  }

  @Test
  void aCapOfZeroStoresOnlyAnswersWithoutABodyWhole() throws Exception {
    server.close();
    server = new TestServer(IdempotencyFilterConfig.builder(store).maxResponseBytes(0).build(), app);
    HttpResponse<byte[]> empty = server.send(sized("zero-empty", "stream", 0));
    assertThat(empty.statusCode()).isEqualTo(201);
    assertThat(store.size()).isEqualTo(1);
    HttpResponse<byte[]> one = server.send(sized("zero-one", "stream", 1));
    assertThat(one.body()).isEqualTo(TestApp.sized(2, 1));
    assertThat(store.size()).isEqualTo(2);
    assertThat(header(server.send(sized("zero-empty", "stream", 0)), "Idempotent-Replayed")).isEqualTo("true");
    assertTooLargeToReplay(server.send(sized("zero-one", "stream", 1)), 201, 1, "/sized/2");
    assertThat(app.calls("POST /sized")).isEqualTo(2);
  }

  /**
   * The answer of the report, 2 MiB, under the default limit (now 4 MiB): stored and replayed byte
   * for byte, and the handler ran once.
   */
  @Test
  void aTwoMebibyteAnswerIsStoredAndReplayedUnderTheDefaultLimit() throws Exception {
    server.close();
    server = new TestServer(IdempotencyFilterConfig.builder(store).build(), app);
    int bytes = 2 * 1024 * 1024;
    HttpResponse<byte[]> first = server.send(sized("two-mib", "stream", bytes));
    assertThat(first.body()).isEqualTo(TestApp.sized(1, bytes));
    HttpResponse<byte[]> replay = server.send(sized("two-mib", "stream", bytes));
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(app.calls("POST /sized")).isEqualTo(1);
    assertThat(warnings).isEmpty();
  }

}
