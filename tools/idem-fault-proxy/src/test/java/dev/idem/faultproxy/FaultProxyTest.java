package dev.idem.faultproxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The proxy between {@link HttpClient} (or a raw socket) and the JDK's {@link HttpServer}, which
 * counts and records what it handles.
 */
@Timeout(60)
class FaultProxyTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final byte[] FIXED = "hello, fixed".getBytes(StandardCharsets.UTF_8);

  /** What the server handled. */
  record Received(String method, String path, Headers headers, byte[] body) {
    Optional<String> header(String name) {
      return Optional.ofNullable(headers.getFirst(name));
    }
  }

  private HttpServer server;
  private ExecutorService serverThreads;
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final AtomicInteger effects = new AtomicInteger();
  private HttpClient http;

  @BeforeEach
  void startServer() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    serverThreads = Executors.newCachedThreadPool();
    server.setExecutor(serverThreads);
    server.createContext("/", this::handle);
    server.start();
    http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(WAIT)
            .build();
  }

  @AfterEach
  void stopServer() {
    server.stop(0);
    serverThreads.shutdownNow();
  }

  private void handle(HttpExchange ex) throws IOException {
    try (ex) {
      byte[] body = ex.getRequestBody().readAllBytes();
      received.add(
          new Received(ex.getRequestMethod(), ex.getRequestURI().toString(), ex.getRequestHeaders(), body));
      Headers out = ex.getResponseHeaders();
      switch (ex.getRequestURI().getPath()) {
        case "/fixed":
          out.add("X-Test", "fixed");
          out.add("Content-Type", "text/plain; charset=utf-8");
          if ("HEAD".equals(ex.getRequestMethod())) {
            out.set("Content-Length", Integer.toString(FIXED.length));
            ex.sendResponseHeaders(200, -1);
          } else {
            ex.sendResponseHeaders(200, FIXED.length);
            ex.getResponseBody().write(FIXED);
          }
          break;
        case "/chunked":
          out.add("X-Test", "chunked");
          ex.sendResponseHeaders(200, 0);
          OutputStream os = ex.getResponseBody();
          for (int i = 0; i < 10; i++) {
            os.write(("part " + i + "\n").getBytes(StandardCharsets.UTF_8));
            os.flush();
          }
          break;
        case "/nothing":
          ex.sendResponseHeaders(204, -1);
          break;
        case "/orders":
          byte[] created = ("{\"id\":" + effects.incrementAndGet() + "}").getBytes(StandardCharsets.UTF_8);
          out.add("Content-Type", "application/json");
          ex.sendResponseHeaders(201, created.length);
          ex.getResponseBody().write(created);
          break;
        case "/echo":
          out.add("X-Transfer-Encoding", String.valueOf(ex.getRequestHeaders().getFirst("Transfer-Encoding")));
          ex.sendResponseHeaders(200, body.length == 0 ? -1 : body.length);
          ex.getResponseBody().write(body);
          break;
        case "/slow":
          try {
            Thread.sleep(2_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          ex.sendResponseHeaders(200, -1);
          break;
        default:
          ex.sendResponseHeaders(404, -1);
          break;
      }
    }
  }

  private int serverPort() {
    return server.getAddress().getPort();
  }

  private FaultProxy.Builder proxy() {
    return FaultProxy.builder().target("127.0.0.1", serverPort());
  }

  private static HttpRequest.Builder request(FaultProxy proxy, String path) {
    return HttpRequest.newBuilder(proxy.uri().resolve(path)).timeout(WAIT);
  }

  private static HttpRequest post(FaultProxy proxy, String key) {
    return request(proxy, "/orders")
        .header("Idempotency-Key", key)
        .POST(BodyPublishers.ofString("{\"value\":42}"))
        .build();
  }

  // ---- NONE ----

  @Test
  void relaysContentLengthResponse() throws Exception {
    try (FaultProxy proxy = proxy().start()) {
      HttpResponse<byte[]> r = http.send(request(proxy, "/fixed").build(), BodyHandlers.ofByteArray());

      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("X-Test")).hasValue("fixed");
      assertThat(r.headers().firstValue("Content-Type")).hasValue("text/plain; charset=utf-8");
      assertThat(r.body()).isEqualTo(FIXED);
      assertThat(proxy.await(1, WAIT)).isTrue();
      assertThat(proxy.log())
          .extracting(LoggedRequest::number, LoggedRequest::method, LoggedRequest::target,
              LoggedRequest::fault, LoggedRequest::status, LoggedRequest::delivered, LoggedRequest::error)
          .containsExactly(tuple(1, "GET", "/fixed", Fault.NONE, OptionalInt.of(200), true, Optional.empty()));
    }
  }

  @Test
  void relaysChunkedResponse() throws Exception {
    try (FaultProxy proxy = proxy().start()) {
      HttpResponse<String> r = http.send(request(proxy, "/chunked").build(), BodyHandlers.ofString());

      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Transfer-Encoding")).hasValue("chunked");
      assertThat(r.headers().firstValue("X-Test")).hasValue("chunked");
      StringBuilder expected = new StringBuilder();
      for (int i = 0; i < 10; i++) {
        expected.append("part ").append(i).append('\n');
      }
      assertThat(r.body()).isEqualTo(expected.toString());
    }
  }

  @Test
  void relays204AndHead() throws Exception {
    try (FaultProxy proxy = proxy().start()) {
      HttpResponse<String> none = http.send(request(proxy, "/nothing").DELETE().build(), BodyHandlers.ofString());
      HttpResponse<String> head =
          http.send(request(proxy, "/fixed").method("HEAD", BodyPublishers.noBody()).build(), BodyHandlers.ofString());
      HttpResponse<String> after = http.send(request(proxy, "/fixed").build(), BodyHandlers.ofString());

      assertThat(none.statusCode()).isEqualTo(204);
      assertThat(none.body()).isEmpty();
      assertThat(head.statusCode()).isEqualTo(200);
      assertThat(head.headers().firstValue("Content-Length")).hasValue(Integer.toString(FIXED.length));
      assertThat(head.body()).isEmpty();
      assertThat(after.body()).isEqualTo("hello, fixed");
      assertThat(proxy.await(3, WAIT)).isTrue();
      assertThat(proxy.log()).extracting(LoggedRequest::status)
          .containsExactly(OptionalInt.of(204), OptionalInt.of(200), OptionalInt.of(200));
    }
  }

  @Test
  void relaysResponsesByteForByte() throws Exception {
    List<String> requests =
        List.of(
            "GET /fixed HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
            "GET /chunked HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
            "DELETE /nothing HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
            "HEAD /fixed HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello",
            "POST /echo HTTP/1.1\r\nHost: test\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3\r\nhel\r\n2;x=y\r\nlo\r\n0\r\n\r\n");
    try (FaultProxy proxy = proxy().start()) {
      for (String req : requests) {
        String direct = withoutDate(rawExchange(serverPort(), req));
        String proxied = withoutDate(rawExchange(proxy.port(), req));
        assertThat(proxied).as(req).isEqualTo(direct).startsWith("HTTP/1.1 2");
      }
      assertThat(received).hasSize(2 * requests.size());
    }
  }

  // ---- LOSE_RESPONSE ----

  @Test
  void lostResponseWasHandledOnceAndTheRetrySucceeds() throws Exception {
    try (FaultProxy proxy = proxy().fault(1, Fault.LOSE_RESPONSE).start()) {
      HttpRequest post = post(proxy, "order-42");

      assertThatThrownBy(() -> http.send(post, BodyHandlers.ofString())).isInstanceOf(IOException.class);
      assertThat(effects).hasValue(1);
      assertThat(received).hasSize(1);

      HttpResponse<String> retry = http.send(post, BodyHandlers.ofString());

      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.body()).isEqualTo("{\"id\":2}");
      assertThat(effects).hasValue(2);
      assertThat(received).extracting(r -> r.header("Idempotency-Key"))
          .containsExactly(Optional.of("order-42"), Optional.of("order-42"));
      assertThat(proxy.await(2, WAIT)).isTrue();
      assertThat(proxy.log())
          .extracting(LoggedRequest::number, LoggedRequest::fault, LoggedRequest::status, LoggedRequest::delivered)
          .containsExactly(
              tuple(1, Fault.LOSE_RESPONSE, OptionalInt.of(201), false),
              tuple(2, Fault.NONE, OptionalInt.of(201), true));
    }
  }

  @Test
  void recordedResponsesKeepTheLostAnswerWithItsHeadersAndPayload() throws Exception {
    try (FaultProxy proxy =
        proxy().recordResponses(true).fault(1, Fault.LOSE_RESPONSE).fault(2, Fault.LOSE_RESPONSE).start()) {
      assertThatThrownBy(() -> http.send(post(proxy, "order-7"), BodyHandlers.ofString()))
          .isInstanceOf(IOException.class);
      // a POST: HttpClient silently re-sends a GET whose connection was reset
      assertThatThrownBy(() -> http.send(request(proxy, "/chunked").POST(BodyPublishers.noBody()).build(),
              BodyHandlers.ofString()))
          .isInstanceOf(IOException.class);
      HttpResponse<String> fixed = http.send(request(proxy, "/fixed").build(), BodyHandlers.ofString());

      assertThat(proxy.await(3, WAIT)).isTrue();
      List<LoggedRequest> log = proxy.log();
      RecordedResponse lost = log.get(0).response().orElseThrow();
      assertThat(lost.status()).isEqualTo(201);
      assertThat(lost.header("content-type")).hasValue("application/json");
      assertThat(lost.bodyAsString()).isEqualTo("{\"id\":1}");
      StringBuilder parts = new StringBuilder();
      for (int i = 0; i < 10; i++) {
        parts.append("part ").append(i).append('\n');
      }
      // the chunk framing is not part of the payload
      assertThat(log.get(1).response().orElseThrow().bodyAsString()).isEqualTo(parts.toString());
      assertThat(log.get(2).response().orElseThrow().body()).isEqualTo(fixed.body().getBytes(StandardCharsets.UTF_8));
    }
  }

  @Test
  void responsesAreNotRecordedUnlessAskedFor() throws Exception {
    try (FaultProxy proxy = proxy().fault(1, Fault.LOSE_RESPONSE).start()) {
      assertThatThrownBy(() -> http.send(post(proxy, "order-8"), BodyHandlers.ofString()))
          .isInstanceOf(IOException.class);
      assertThat(proxy.await(1, WAIT)).isTrue();
      assertThat(proxy.log().get(0).response()).isEmpty();
    }
  }

  // ---- DROP_REQUEST ----

  @Test
  void droppedRequestNeverReachesTheServer() throws Exception {
    try (FaultProxy proxy = proxy().fault(1, Fault.DROP_REQUEST).start()) {
      assertThatThrownBy(() -> http.send(post(proxy, "order-7"), BodyHandlers.ofString()))
          .isInstanceOf(IOException.class);

      assertThat(proxy.await(1, WAIT)).isTrue();
      assertThat(received).isEmpty();
      assertThat(effects).hasValue(0);
      LoggedRequest logged = proxy.log().get(0);
      assertThat(logged.fault()).isEqualTo(Fault.DROP_REQUEST);
      assertThat(logged.status()).isEmpty();
      assertThat(logged.delivered()).isFalse();
      assertThat(logged.idempotencyKey()).hasValue("order-7");

      HttpResponse<String> retry = http.send(post(proxy, "order-7"), BodyHandlers.ofString());
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(effects).hasValue(1);
    }
  }

  // ---- delay ----

  @Test
  void delayedResponseArrivesAfterAtLeastTheDelay() throws Exception {
    Duration delay = Duration.ofMillis(400);
    try (FaultProxy proxy = proxy().fault(1, Fault.delay(delay)).start()) {
      long start = System.nanoTime();
      HttpResponse<String> r = http.send(request(proxy, "/fixed").build(), BodyHandlers.ofString());
      Duration elapsed = Duration.ofNanos(System.nanoTime() - start);

      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).isEqualTo("hello, fixed");
      assertThat(elapsed).isGreaterThanOrEqualTo(delay);
      assertThat(proxy.await(1, WAIT)).isTrue();
      assertThat(proxy.log().get(0).fault()).isEqualTo(Fault.delay(delay));
    }
  }

  // ---- keep-alive ----

  @Test
  void requestsOnOneKeepAliveConnectionAreNumberedAndFaultedPerRequest() throws Exception {
    try (FaultProxy proxy = proxy().fault(2, Fault.LOSE_RESPONSE).start();
        Socket s = new Socket("127.0.0.1", proxy.port())) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();

      out.write(ascii("POST /orders HTTP/1.1\r\nHost: test\r\nIdempotency-Key: a\r\nContent-Length: 2\r\n\r\n{}"));
      out.flush();
      assertThat(readResponse(in)).startsWith("HTTP/1.1 201 ").endsWith("{\"id\":1}");

      out.write(ascii("POST /orders HTTP/1.1\r\nHost: test\r\nIdempotency-Key: b\r\nContent-Length: 2\r\n\r\n{}"));
      out.flush();
      assertThatThrownBy(() -> readResponse(in)).isInstanceOf(IOException.class);

      assertThat(proxy.await(2, WAIT)).isTrue();
      assertThat(effects).hasValue(2);
      assertThat(proxy.log())
          .extracting(LoggedRequest::number, LoggedRequest::idempotencyKey, LoggedRequest::fault, LoggedRequest::delivered)
          .containsExactly(
              tuple(1, Optional.of("a"), Fault.NONE, true),
              tuple(2, Optional.of("b"), Fault.LOSE_RESPONSE, false));
    }
  }

  @Test
  void httpClientKeepAliveRequestsAreCountedAsRequestsNotConnections() throws Exception {
    try (FaultProxy proxy = proxy().fault(3, Fault.delay(Duration.ofMillis(50))).start()) {
      for (int i = 0; i < 4; i++) {
        assertThat(http.send(request(proxy, "/fixed").build(), BodyHandlers.ofString()).statusCode())
            .isEqualTo(200);
      }
      assertThat(proxy.await(4, WAIT)).isTrue();
      assertThat(proxy.requestsSeen()).isEqualTo(4);
      assertThat(proxy.log()).extracting(LoggedRequest::number).containsExactly(1, 2, 3, 4);
      assertThat(proxy.log()).extracting(LoggedRequest::fault)
          .containsExactly(Fault.NONE, Fault.NONE, Fault.delay(Duration.ofMillis(50)), Fault.NONE);
    }
  }

  // ---- request bodies ----

  @Test
  void postBodiesWithContentLengthAndChunkedReachTheServerIntact() throws Exception {
    byte[] payload = new byte[200_000];
    new Random(42).nextBytes(payload);
    try (FaultProxy proxy = proxy().start()) {
      HttpResponse<byte[]> fixed =
          http.send(request(proxy, "/echo").POST(BodyPublishers.ofByteArray(payload)).build(), BodyHandlers.ofByteArray());
      HttpResponse<byte[]> chunked =
          http.send(
              request(proxy, "/echo").POST(BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(payload))).build(),
              BodyHandlers.ofByteArray());
      HttpResponse<byte[]> continued =
          http.send(
              request(proxy, "/echo").expectContinue(true).POST(BodyPublishers.ofByteArray(payload)).build(),
              BodyHandlers.ofByteArray());

      assertThat(received).hasSize(3);
      assertThat(received.get(0).header("Transfer-Encoding")).isEmpty();
      assertThat(received.get(0).header("Content-Length")).hasValue(Integer.toString(payload.length));
      assertThat(received.get(1).header("Transfer-Encoding")).hasValue("chunked");
      assertThat(received.get(2).header("Expect")).hasValueSatisfying(v -> assertThat(v).isEqualToIgnoringCase("100-continue"));
      assertThat(received).allSatisfy(r -> assertThat(r.body()).isEqualTo(payload));
      assertThat(List.of(fixed, chunked, continued)).allSatisfy(r -> {
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).isEqualTo(payload);
      });
      assertThat(chunked.headers().firstValue("X-Transfer-Encoding")).hasValue("chunked");
    }
  }

  // ---- log ----

  @Test
  void logRecordsTheIdempotencyKeyOfEachRequest() throws Exception {
    try (FaultProxy proxy = proxy().start()) {
      http.send(post(proxy, "key-1"), BodyHandlers.ofString());
      http.send(request(proxy, "/fixed").build(), BodyHandlers.ofString());
      http.send(
          request(proxy, "/orders").header("idempotency-key", "  key-3 ").POST(BodyPublishers.ofString("{}")).build(),
          BodyHandlers.ofString());

      assertThat(proxy.await(3, WAIT)).isTrue();
      assertThat(proxy.log())
          .extracting(LoggedRequest::method, LoggedRequest::target, LoggedRequest::idempotencyKey)
          .containsExactly(
              tuple("POST", "/orders", Optional.of("key-1")),
              tuple("GET", "/fixed", Optional.empty()),
              tuple("POST", "/orders", Optional.of("key-3")));
      assertThatThrownBy(() -> proxy.log().clear()).isInstanceOf(UnsupportedOperationException.class);
    }
  }

  // ---- limits and failures ----

  @Test
  void oversizedBodyIsAnswered502AndNeverReachesTheServer() throws Exception {
    byte[] payload = new byte[4096];
    try (FaultProxy proxy = proxy().maxBodyBytes(1024).start()) {
      HttpResponse<String> fixed =
          http.send(request(proxy, "/echo").POST(BodyPublishers.ofByteArray(payload)).build(), BodyHandlers.ofString());
      HttpResponse<String> chunked =
          http.send(
              request(proxy, "/echo").POST(BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(payload))).build(),
              BodyHandlers.ofString());
      // Expect: 100-continue with a declared length over the limit: 502 instead of 100 (a raw
      // socket, because the JDK 17 HttpClient hangs on a non-100 answer, JDK-8286171)
      String continued;
      try (Socket s = new Socket("127.0.0.1", proxy.port())) {
        s.setSoTimeout(10_000);
        s.getOutputStream().write(ascii(
            "POST /echo HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 4096\r\n\r\n"));
        s.getOutputStream().flush();
        continued = readResponse(s.getInputStream());
      }

      assertThat(List.of(fixed, chunked)).allSatisfy(r -> {
        assertThat(r.statusCode()).isEqualTo(502);
        assertThat(r.body()).contains("exceeds 1024 bytes");
      });
      assertThat(continued).startsWith("HTTP/1.1 502 Bad Gateway\r\n").contains("exceeds 1024 bytes");
      assertThat(received).isEmpty();
      assertThat(proxy.await(3, WAIT)).isTrue();
      assertThat(proxy.log()).allSatisfy(l -> {
        assertThat(l.delivered()).isFalse();
        assertThat(l.status()).isEmpty();
        assertThat(l.error()).hasValueSatisfying(e -> assertThat(e).contains("exceeds 1024 bytes"));
      });
    }
  }

  @Test
  void unreachableServerIsAnswered502() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    try (FaultProxy proxy = FaultProxy.builder().target("127.0.0.1", closedPort).start()) {
      HttpResponse<String> r = http.send(request(proxy, "/fixed").build(), BodyHandlers.ofString());

      assertThat(r.statusCode()).isEqualTo(502);
      assertThat(proxy.await(1, WAIT)).isTrue();
      assertThat(proxy.log().get(0).error()).hasValueSatisfying(e -> assertThat(e).startsWith("upstream:"));
    }
  }

  @Test
  void slowServerIsAnswered504AfterTheReadTimeout() throws Exception {
    try (FaultProxy proxy = proxy().readTimeout(Duration.ofMillis(200)).start()) {
      HttpResponse<String> r = http.send(request(proxy, "/slow").build(), BodyHandlers.ofString());

      assertThat(r.statusCode()).isEqualTo(504);
      assertThat(r.body()).contains("no answer within 200 ms");
    }
  }

  // ---- close ----

  @Test
  void closeIsIdempotentFreesThePortAndEndsRequestsInFlight() throws Exception {
    FaultProxy proxy = proxy().fault(1, Fault.delay(Duration.ofSeconds(30))).start();
    int port = proxy.port();
    CompletableFuture<HttpResponse<String>> inFlight =
        http.sendAsync(request(proxy, "/fixed").timeout(Duration.ofSeconds(60)).build(), BodyHandlers.ofString());
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (proxy.requestsSeen() < 1 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(proxy.requestsSeen()).isEqualTo(1);

    proxy.close();
    assertThatCode(proxy::close).doesNotThrowAnyException();

    assertThat(proxy.isClosed()).isTrue();
    assertThat(inFlight).failsWithin(WAIT);
    assertThat(received).isEmpty();
    assertThat(proxy.log()).singleElement().satisfies(l -> {
      assertThat(l.delivered()).isFalse();
      assertThat(l.error()).isPresent();
    });
    assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).isInstanceOf(ConnectException.class);
    try (ServerSocket again = new ServerSocket()) {
      again.setReuseAddress(true);
      assertThatCode(() -> again.bind(new InetSocketAddress("127.0.0.1", port))).doesNotThrowAnyException();
    }
  }

  @Test
  void closeEndsIdleKeepAliveConnections() throws Exception {
    FaultProxy proxy = proxy().start();
    try (Socket s = new Socket("127.0.0.1", proxy.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(ascii("GET /fixed HTTP/1.1\r\nHost: test\r\n\r\n"));
      assertThat(readResponse(s.getInputStream())).endsWith("hello, fixed");

      proxy.close();

      assertThat(readToEndOrFail(s.getInputStream())).isTrue();
    }
  }

  // ---- the class Javadoc example ----

  @Test
  void javadocExampleRuns() throws Exception {
    // server = the test server; its /orders counts effects like the example's
    try (FaultProxy proxy = FaultProxy.builder()
        .target("127.0.0.1", serverPort())
        .fault(1, Fault.LOSE_RESPONSE)
        .fault(2, Fault.delay(Duration.ofMillis(500)))
        .start()) {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest post = HttpRequest.newBuilder(proxy.uri().resolve("/orders"))
          .header("Idempotency-Key", "order-42")
          .POST(HttpRequest.BodyPublishers.ofString("{\"value\":42}"))
          .build();
      HttpResponse<String> retry = null;
      try {
        client.send(post, HttpResponse.BodyHandlers.ofString());
      } catch (IOException lost) {
        retry = client.send(post, HttpResponse.BodyHandlers.ofString());
      }
      assertThat(retry).isNotNull();
      assertThat(retry.statusCode() + " " + retry.body()).isEqualTo("201 {\"id\":2}");
      assertThat(proxy.await(2, Duration.ofSeconds(5))).isTrue();
      assertThat(effects).hasValue(2);
      assertThat(proxy.uri()).isEqualTo(URI.create("http://127.0.0.1:" + proxy.port() + "/"));
    }
  }

  // ---- helpers ----

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }

  private static String withoutDate(String response) {
    return response.replaceAll("(?im)^date: [^\r\n]*\r\n", "");
  }

  /** Sends {@code request} on a new connection and reads until the server closes it. */
  private static String rawExchange(int port, String request) throws IOException {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(ascii(request));
      s.getOutputStream().flush();
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      s.getInputStream().transferTo(all);
      return all.toString(StandardCharsets.ISO_8859_1);
    }
  }

  /** Reads one response with a Content-Length body (or none); EOF before it is an IOException. */
  private static String readResponse(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        throw new EOFException("end of stream after " + head.length() + " bytes");
      }
      head.append((char) b);
    }
    int length = 0;
    for (String line : head.toString().split("\r\n")) {
      if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring(15).trim());
      }
    }
    byte[] body = in.readNBytes(length);
    if (body.length < length) {
      throw new EOFException("truncated body");
    }
    return head + new String(body, StandardCharsets.ISO_8859_1);
  }

  /** @return true once the stream ends or resets, false if it stays open until the read timeout */
  private static boolean readToEndOrFail(InputStream in) {
    try {
      while (in.read() >= 0) {
        // discard
      }
      return true;
    } catch (SocketTimeoutException e) {
      return false;
    } catch (IOException e) {
      return true;
    }
  }
}
