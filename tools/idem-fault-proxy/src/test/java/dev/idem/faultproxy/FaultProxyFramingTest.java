package dev.idem.faultproxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Exact-byte framing tests, with a scripted raw upstream and a raw client socket. */
@Timeout(60)
class FaultProxyFramingTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private ScriptedUpstream upstream;
  private FaultProxy proxy;
  private Socket client;

  @BeforeEach
  void startUpstream() throws IOException {
    upstream = new ScriptedUpstream();
  }

  @AfterEach
  void stopAll() throws IOException {
    if (client != null) {
      client.close();
    }
    if (proxy != null) {
      proxy.close();
    }
    upstream.close();
  }

  private FaultProxy.Builder proxyBuilder() {
    return FaultProxy.builder().target("127.0.0.1", upstream.port());
  }

  private Socket connect() throws IOException {
    client = new Socket("127.0.0.1", proxy.port());
    client.setSoTimeout(10_000);
    return client;
  }

  private static void send(Socket s, String bytes) throws IOException {
    OutputStream out = s.getOutputStream();
    out.write(bytes.getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
  }

  private static String readExactly(Socket s, int n) throws IOException {
    byte[] bytes = s.getInputStream().readNBytes(n);
    return new String(bytes, StandardCharsets.ISO_8859_1);
  }

  private static String readToEnd(Socket s) throws IOException {
    InputStream in = s.getInputStream();
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    byte[] buf = new byte[4096];
    int n;
    while ((n = in.read(buf)) >= 0) {
      all.write(buf, 0, n);
    }
    return all.toString(StandardCharsets.ISO_8859_1);
  }

  private static final String GET = "GET /x HTTP/1.1\r\nHost: test\r\n\r\n";

  @Test
  void chunkedResponseWithExtensionsAndTrailersIsRelayedByteForByteAndEndsWhereItShould()
      throws Exception {
    String chunked =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
            + "5;name=value\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc\r\n\r\n";
    String fixed = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbye";
    upstream.then(chunked).then(fixed);
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, GET);
    assertThat(readExactly(s, chunked.length())).isEqualTo(chunked);
    send(s, GET);
    assertThat(readExactly(s, fixed.length())).isEqualTo(fixed);

    assertThat(proxy.await(2, WAIT)).isTrue();
    assertThat(proxy.log())
        .extracting(LoggedRequest::number, LoggedRequest::status, LoggedRequest::delivered)
        .containsExactly(
            tuple(1, OptionalInt.of(200), true),
            tuple(2, OptionalInt.of(200), true));
    assertThat(upstream.connections).hasValue(1);
  }

  @Test
  void interimResponsesArePassedThroughBeforeTheFinalResponse() throws Exception {
    String interim = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
    String fin = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    upstream.then(interim + fin);
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, GET);

    assertThat(readExactly(s, interim.length() + fin.length())).isEqualTo(interim + fin);
    assertThat(proxy.await(1, WAIT)).isTrue();
    assertThat(proxy.log().get(0).status()).hasValue(200);
  }

  @Test
  void closeDelimitedResponseIsRelayedUntilTheServerCloses() throws Exception {
    String response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the server closes";
    upstream.thenClose(response);
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, GET);

    assertThat(readToEnd(s)).isEqualTo(response);
  }

  @Test
  void headAnd304AndHave204NoBodyDespiteContentLength() throws Exception {
    String head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    String notModified = "HTTP/1.1 304 Not Modified\r\nContent-Length: 1000\r\nETag: \"a\"\r\n\r\n";
    String noContent = "HTTP/1.1 204 No Content\r\n\r\n";
    String fixed = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone";
    upstream.then(head).then(notModified).then(noContent).then(fixed);
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, "HEAD /x HTTP/1.1\r\nHost: test\r\n\r\n");
    assertThat(readExactly(s, head.length())).isEqualTo(head);
    send(s, "GET /x HTTP/1.1\r\nHost: test\r\nIf-None-Match: \"a\"\r\n\r\n");
    assertThat(readExactly(s, notModified.length())).isEqualTo(notModified);
    send(s, "DELETE /x HTTP/1.1\r\nHost: test\r\n\r\n");
    assertThat(readExactly(s, noContent.length())).isEqualTo(noContent);
    send(s, GET);
    assertThat(readExactly(s, fixed.length())).isEqualTo(fixed);

    assertThat(proxy.await(4, WAIT)).isTrue();
    assertThat(proxy.log()).extracting(LoggedRequest::method).containsExactly("HEAD", "GET", "DELETE", "GET");
  }

  @Test
  void lostResponseIsReadCompletelyFromTheServerButNoByteReachesTheClient() throws Exception {
    String chunked =
        "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "4\r\nmade\r\n0\r\n\r\n";
    upstream.then(chunked);
    proxy = proxyBuilder().fault(1, Fault.LOSE_RESPONSE).start();
    Socket s = connect();

    send(s, "POST /orders HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\n{}");

    assertThat(readToEndOrReset(s)).isEmpty();
    assertThat(proxy.await(1, WAIT)).isTrue();
    LoggedRequest logged = proxy.log().get(0);
    assertThat(logged.fault()).isEqualTo(Fault.LOSE_RESPONSE);
    assertThat(logged.status()).hasValue(201);
    assertThat(logged.delivered()).isFalse();
    assertThat(logged.error()).isEmpty();
    assertThat(upstream.requestBodies).containsExactly("{}");
    // the proxy closed its upstream connection after the whole response
    waitUntil(() -> upstream.closedByPeer.get() == 1);
  }

  @Test
  void expectContinueIsAnsweredByTheProxyAndTheServers100IsNotRepeated() throws Exception {
    String fin = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    upstream.then("HTTP/1.1 100 Continue\r\n\r\n" + fin);
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, "POST /x HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    String cont = "HTTP/1.1 100 Continue\r\n\r\n";
    assertThat(readExactly(s, cont.length())).isEqualTo(cont);
    send(s, "hello");

    assertThat(readExactly(s, fin.length())).isEqualTo(fin);
    assertThat(upstream.requestBodies).containsExactly("hello");
  }

  @Test
  void malformedRequestIsAnswered400AndGetsNoNumber() throws Exception {
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, "NOT HTTP\r\n\r\n");

    assertThat(readToEnd(s)).startsWith("HTTP/1.1 400 Bad Request\r\n");
    assertThat(proxy.requestsSeen()).isZero();
    assertThat(upstream.connections).hasValue(0);
  }

  @Test
  void requestWithBothTransferEncodingAndContentLengthIsRefused() throws Exception {
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(
        s,
        "POST /x HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
            + "5\r\nhello\r\n0\r\n\r\n");

    assertThat(readToEnd(s)).startsWith("HTTP/1.1 400 Bad Request\r\n");
    assertThat(proxy.await(1, WAIT)).isTrue();
    assertThat(proxy.log().get(0).error()).hasValueSatisfying(e -> assertThat(e).contains("400"));
    assertThat(upstream.connections).hasValue(0);
  }

  @Test
  void oversizedHeadIsAnswered502AndNeverForwarded() throws Exception {
    proxy = proxyBuilder().maxHeaderBytes(1024).start();
    Socket s = connect();

    send(s, "GET /x HTTP/1.1\r\nHost: test\r\nX-Big: " + "a".repeat(2000) + "\r\n\r\n");

    assertThat(readToEnd(s)).startsWith("HTTP/1.1 502 Bad Gateway\r\n").contains("exceeds 1024");
    assertThat(upstream.connections).hasValue(0);
  }

  @Test
  void oversizedChunkedResponseIsAnswered502() throws Exception {
    upstream.then(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + "x".repeat(1024) + "\r\n"
            + "400\r\n" + "x".repeat(1024) + "\r\n0\r\n\r\n");
    proxy = proxyBuilder().maxBodyBytes(1500).start();
    Socket s = connect();

    send(s, GET);

    assertThat(readToEnd(s)).startsWith("HTTP/1.1 502 Bad Gateway\r\n").contains("exceeds 1500");
    assertThat(proxy.await(1, WAIT)).isTrue();
    assertThat(proxy.log().get(0).delivered()).isFalse();
  }

  @Test
  void chunkFramingOverheadIsBounded() throws Exception {
    upstream.then("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + "1\r\nx\r\n".repeat(2000) + "0\r\n\r\n");
    proxy = proxyBuilder().maxHeaderBytes(1024).start();
    Socket s = connect();

    send(s, GET);

    assertThat(readToEnd(s)).startsWith("HTTP/1.1 502 Bad Gateway\r\n").contains("chunk framing");
  }

  @Test
  void malformedResponseIsAnswered502() throws Exception {
    upstream.then("SMTP ready\r\n\r\n");
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, GET);

    assertThat(readToEnd(s)).startsWith("HTTP/1.1 502 Bad Gateway\r\n").contains("status line");
  }

  @Test
  void serverClosingAnIdleKeepAliveConnectionIsDetectedBeforeTheNextRequest() throws Exception {
    String first = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1";
    String second = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2";
    // the server answers, keeps the connection "alive", then closes it while idle
    upstream.thenClose(first).then(second);
    proxy = proxyBuilder().start();
    Socket s = connect();

    send(s, GET);
    assertThat(readExactly(s, first.length())).isEqualTo(first);
    waitUntil(() -> upstream.responsesWritten.get() == 1);
    Thread.sleep(100); // let the FIN arrive
    send(s, GET);

    assertThat(readExactly(s, second.length())).isEqualTo(second);
    assertThat(upstream.connections).hasValue(2);
  }

  private static String readToEndOrReset(Socket s) {
    try {
      return readToEnd(s);
    } catch (IOException reset) {
      return "";
    }
  }

  private static void waitUntil(BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within " + WAIT);
      }
      Thread.sleep(10);
    }
  }

  @Test
  void droppedRequestResetsTheClientAndNeverReachesTheServer() throws Exception {
    proxy = proxyBuilder().fault(1, Fault.DROP_REQUEST).start();
    Socket s = connect();

    send(s, "POST /orders HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\n{}");

    assertThatThrownBy(() -> {
          String got = readToEnd(s);
          if (got.isEmpty()) {
            throw new IOException("end of stream");
          }
        })
        .isInstanceOf(IOException.class);
    assertThat(upstream.connections).hasValue(0);
  }
}
