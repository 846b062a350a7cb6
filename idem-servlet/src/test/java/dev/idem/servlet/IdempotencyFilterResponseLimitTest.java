package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.ResponsePolicy;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.util.ArrayList;
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
 * whole, streamed, and are not stored.
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
   * {@code CAP + 1} in writer mode overflows only when the filter encodes the writer's last
   * characters after the handler returned; the larger sizes overflow while the handler writes.
   */
  @ParameterizedTest(name = "[{index}] {0}, {1} bytes")
  @CsvSource({"stream, 65537", "stream, 262267", "writer, 65537", "writer, 262267"})
  void responseOverTheCapReachesTheClientWholeAndIsNotStored(String mode, int bytes) throws Exception {
    String key = "over-" + mode + "-" + bytes;
    HttpResponse<byte[]> first = server.send(sized(key, mode, bytes));
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo(TestApp.sized(1, bytes));
    assertThat(header(first, "Location")).isEqualTo("/sized/1");
    assertThat(header(first, "X-Run")).isEqualTo("1");
    assertThat(header(first, "Set-Cookie")).startsWith("sized=c1");
    assertThat(header(first, "Content-Type")).startsWith(mode.equals("writer") ? "text/plain" : "application/octet-stream");
    assertThat(header(first, "Idempotent-Replayed")).isNull();
    assertThat(store.size()).as("no record is left in the store").isZero();

    assertThat(warnings).hasSize(1);
    String message = warnings.get(0).getMessage();
    assertThat(warnings.get(0).getLevel()).isEqualTo(Level.WARNING);
    assertThat(message).contains("'" + key + "'", "maxResponseBytes (" + CAP + " bytes)",
        "a retry with this key will run the operation again");

    HttpResponse<byte[]> retry = server.send(sized(key, mode, bytes));
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(header(retry, "Idempotent-Replayed")).isNull();
    assertThat(retry.body()).as("the handler ran again").isEqualTo(TestApp.sized(2, bytes));
    assertThat(app.calls("POST /sized")).isEqualTo(2);
    assertThat(store.size()).isZero();
  }

  @Test
  void anOverflowIsNotStoredEvenWhenTheResponsePolicyStoresEverything() throws Exception {
    server.close();
    LeaseIdempotency storeAll = LeaseIdempotency.builder(store).responsePolicy(ResponsePolicy.storeAll()).build();
    server = new TestServer(IdempotencyFilterConfig.builder(storeAll).maxResponseBytes(CAP).build(), app);

    HttpResponse<byte[]> small = server.send(sized("small", "stream", 10));
    assertThat(small.body()).isEqualTo(TestApp.sized(1, 10));
    assertThat(store.size()).isEqualTo(1);
    HttpResponse<byte[]> big = server.send(sized("big", "stream", CAP + 1));
    assertThat(big.body()).isEqualTo(TestApp.sized(2, CAP + 1));
    assertThat(store.size()).as("only the small answer is stored").isEqualTo(1);
    assertThat(server.send(sized("big", "stream", CAP + 1)).body()).isEqualTo(TestApp.sized(3, CAP + 1));
    assertThat(app.calls("POST /sized")).isEqualTo(3);
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
    assertThat(head).isEqualTo(java.util.Arrays.copyOf(expected, pause));
    assertThat(app.release.getCount()).as("the handler is still waiting").isEqualTo(1);

    app.release.countDown();
    byte[] rest = in.readAllBytes();
    assertThat(rest).isEqualTo(java.util.Arrays.copyOfRange(expected, pause, bytes));
    assertThat(store.size()).isZero();
    HttpResponse<byte[]> retry = server.send(request); // released: runs again, without waiting this time
    assertThat(header(retry, "Idempotent-Replayed")).isNull();
    assertThat(retry.body()).isEqualTo(TestApp.sized(2, bytes));
  }

  @Test
  void aCapOfZeroStoresOnlyAnswersWithoutABody() throws Exception {
    server.close();
    server = new TestServer(IdempotencyFilterConfig.builder(store).maxResponseBytes(0).build(), app);
    HttpResponse<byte[]> empty = server.send(sized("zero-empty", "stream", 0));
    assertThat(empty.statusCode()).isEqualTo(201);
    assertThat(store.size()).isEqualTo(1);
    HttpResponse<byte[]> one = server.send(sized("zero-one", "stream", 1));
    assertThat(one.body()).isEqualTo(TestApp.sized(2, 1));
    assertThat(store.size()).isEqualTo(1);
    assertThat(header(server.send(sized("zero-empty", "stream", 0)), "Idempotent-Replayed")).isEqualTo("true");
    assertThat(header(server.send(sized("zero-one", "stream", 1)), "Idempotent-Replayed")).isNull();
    assertThat(app.calls("POST /sized")).isEqualTo(3);
  }
}
