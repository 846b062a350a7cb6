package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Answers the filter (and the key status endpoint) gives before the request body was read: the
 * body is read and dropped (up to {@link RequestReader#SWALLOW_BYTES}) so the client's connection
 * carries its next request; when more is left, the answer says {@code Connection: close}.
 *
 * <p>The bug these tests are named after: a 400 for a malformed or missing key was sent while the
 * body was still on its way, and Jetty, finding the body unread, closed the connection without a
 * {@code Connection: close} field; a client that keeps connections alive sent its next request on
 * the closed connection and failed ("header parser received no bytes"). Each test speaks HTTP/1.1
 * over one socket, so that the next request really goes on the same connection.
 */
class IdempotencyFilterEarlyAnswerTest {

  private final TestApp app = new TestApp();
  private TestServer server;

  @BeforeEach
  void start() throws Exception {
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(LeaseIdempotency.builder(new InMemoryLeaseStore()).build())
        .required("POST", "/required").optional("POST", "/**").build();
    server = new TestServer(config, app, null, new KeyStatusEndpoint(config, new InMemoryLeaseStore()));
  }

  @AfterEach
  void stop() {
    server.close();
  }

  /** A response read off the socket by its framing ({@code Content-Length}), leaving the connection open. */
  private record Answer(int status, String head, String body) {
    @Nullable String header(String name) {
      return new TestServer.RawResponse(status, head, new byte[0]).header(name);
    }
  }

  private static String request(String method, String path, @Nullable String keyField, String extraFields, int contentLength) {
    return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + (keyField == null ? "" : "Idempotency-Key: " + keyField + "\r\n") + extraFields
        + "Content-Length: " + contentLength + "\r\n\r\n";
  }

  private static void send(OutputStream out, String text) throws IOException {
    out.write(text.getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
  }

  private static Answer read(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        throw new IOException("the connection closed before an answer: " + head.toString(StandardCharsets.ISO_8859_1));
      }
      head.write(b);
      matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    String text = head.toString(StandardCharsets.ISO_8859_1);
    int status = Integer.parseInt(text.substring(9, 12));
    Answer headOnly = new Answer(status, text, "");
    String length = headOnly.header("Content-Length");
    byte[] body = in.readNBytes(length == null ? 0 : Integer.parseInt(length));
    return new Answer(status, text, new String(body, StandardCharsets.UTF_8));
  }

  @Test
  void aMalformedKeyAnsweredBeforeTheBodyArrivedNoLongerClosesTheKeptAliveConnectionUnannounced() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      String body = "{\"title\":\"late\"}";
      send(out, request("POST", "/notes", "k".repeat(256), "", body.length()));
      Thread.sleep(300); // the body arrives after the head, as from a client that writes them separately
      send(out, body);
      Answer refused = read(socket.getInputStream());
      assertThat(refused.status()).isEqualTo(400);
      assertThat(refused.body()).contains(IdempotencyFilter.PROBLEM_KEY_MALFORMED);
      assertThat(refused.header("Connection")).isNull();

      send(out, request("POST", "/notes", "after-the-refusal", "", body.length()) + body);
      Answer next = read(socket.getInputStream());
      assertThat(next.status()).isEqualTo(201);
    }
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void aMissingRequiredKeyAnsweredBeforeTheBodyArrivedKeepsTheConnectionUsable() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      String body = "{\"title\":\"late\"}";
      send(out, request("POST", "/required", null, "", body.length()));
      Thread.sleep(300);
      send(out, body);
      Answer refused = read(socket.getInputStream());
      assertThat(refused.status()).isEqualTo(400);
      assertThat(refused.body()).contains(IdempotencyFilter.PROBLEM_KEY_MISSING);

      send(out, request("POST", "/required", "second", "", body.length()) + body);
      assertThat(read(socket.getInputStream()).status()).isEqualTo(201);
    }
  }

  @Test
  void anEarlyRefusalOfABodyLongerThanWhatIsDroppedSaysConnectionClose() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      int length = 4 * RequestReader.SWALLOW_BYTES;
      send(out, request("POST", "/notes", "k".repeat(256), "", length));
      Thread writer = new Thread(() -> {
        try {
          send(out, "\"" + "x".repeat(length - 2) + "\"");
        } catch (IOException closed) {
          // the server may close before the whole body is sent: that is what it announced
        }
      });
      writer.start();
      Answer refused = read(socket.getInputStream());
      writer.join(20_000);
      assertThat(refused.status()).isEqualTo(400);
      assertThat(refused.header("Connection")).isEqualToIgnoringCase("close");
    }
    assertThat(app.totalCalls()).isZero();
  }

  /**
   * The bug: the refusal read the body until its end or 64 KiB, however slowly it came, so a client
   * sending a byte now and then held the request thread (and waited for its answer) for as long
   * as it liked: up to 64 Ki reads of the container's idle timeout. The drop now stops after
   * {@link RequestReader#SWALLOW_NANOS} and closes the connection; here the body would take 20 s.
   */
  @Test
  void anEarlyRefusalOfABodySentVerySlowlyIsAnsweredBeforeTheBodyEndsAndSaysConnectionClose() throws Exception {
    int length = 400;
    AtomicInteger sent = new AtomicInteger();
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(60_000);
      OutputStream out = socket.getOutputStream();
      send(out, request("POST", "/notes", "k".repeat(256), "", length));
      Thread writer = new Thread(() -> {
        try {
          for (int i = 0; i < length; i++) {
            send(out, "x");
            sent.incrementAndGet();
            Thread.sleep(50);
          }
        } catch (IOException | InterruptedException closed) {
          // the server closed the connection, as it announced
        }
      });
      writer.setDaemon(true);
      writer.start();
      Answer refused = read(socket.getInputStream());
      int sentWhenAnswered = sent.get();
      writer.interrupt();
      assertThat(refused.status()).isEqualTo(400);
      assertThat(refused.body()).contains(IdempotencyFilter.PROBLEM_KEY_MALFORMED);
      assertThat(refused.header("Connection")).isEqualToIgnoringCase("close");
      assertThat(sentWhenAnswered).as("bytes of the body sent when the answer came").isLessThan(length);
    }
    assertThat(app.totalCalls()).isZero();
  }

  @Test
  void anEarlyRefusalOfARequestThatExpects100ContinueNeitherAsksForTheBodyNorKeepsTheConnection() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      send(out, request("POST", "/notes", "k".repeat(256), "Expect: 100-continue\r\n", 10));
      Answer refused = read(socket.getInputStream()); // not "100 Continue": the body is never asked for
      assertThat(refused.status()).isEqualTo(400);
      assertThat(refused.header("Connection")).isEqualToIgnoringCase("close");
    }
    assertThat(app.totalCalls()).isZero();
  }

  @Test
  void theKeyStatusEndpointDropsABodySentToItAndKeepsTheConnectionUsable() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      String body = "{\"title\":\"misdirected\"}";
      send(out, request("POST", KeyStatusEndpoint.DEFAULT_PATH + "/some-key", null, "", body.length()));
      Thread.sleep(300);
      send(out, body);
      Answer refused = read(socket.getInputStream());
      assertThat(refused.status()).isEqualTo(405);

      send(out, request("POST", "/notes", "after-the-405", "", body.length()) + body);
      assertThat(read(socket.getInputStream()).status()).isEqualTo(201);
    }
  }
}
