package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import jakarta.servlet.Filter;
import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.Part;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every kind of body a servlet application reads keeps working behind the filter on embedded Jetty
 * 12: JSON through the reader, {@code application/x-www-form-urlencoded} through {@code
 * getParameter}, {@code multipart/form-data} through {@code getParts} (the servlet has a multipart
 * configuration, as {@code @MultipartConfig} gives), and binary through the input stream. Each is
 * fingerprinted stably: a retry of the same request replays, another request with the same key is
 * refused.
 */
class IdempotencyFilterBodiesTest {

  @TempDir Path uploads;
  InMemoryLeaseStore store = new InMemoryLeaseStore();
  BodiesServlet app = new BodiesServlet();
  TestServer server;

  /** Answers what it read, with the run number of its path. */
  static final class BodiesServlet extends HttpServlet {
    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();

    int calls(String path) {
      AtomicInteger n = calls.get(path);
      return n == null ? 0 : n.get();
    }

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException, ServletException {
      String path = req.getServletPath() + (req.getPathInfo() == null ? "" : req.getPathInfo());
      int run = calls.computeIfAbsent(path, k -> new AtomicInteger()).incrementAndGet();
      StringBuilder out = new StringBuilder("run " + run + "\n");
      switch (path) {
        case "/json" -> out.append("json ").append(req.getReader().lines().reduce("", String::concat));
        case "/form" -> out.append("title=").append(req.getParameter("title"))
            .append(" tags=").append(String.join(",", req.getParameterValues("tag")))
            .append(" lang=").append(req.getParameter("lang"));
        case "/upload" -> {
          out.append("title=").append(req.getParameter("title")).append('\n');
          for (Part part : req.getParts()) {
            out.append(part.getName()).append(' ').append(part.getSubmittedFileName()).append(' ')
                .append(part.getContentType()).append(' ').append(part.getSize()).append(' ')
                .append(sha(part.getInputStream().readAllBytes())).append('\n');
          }
          Part file = req.getPart("file");
          out.append("file=").append(file == null ? null : file.getSubmittedFileName());
        }
        case "/binary", "/raw-multipart" -> {
          byte[] bytes = req.getInputStream().readAllBytes();
          out.append(path.substring(1)).append(' ').append(bytes.length).append(' ').append(sha(bytes));
        }
        default -> res.setStatus(404);
      }
      res.setStatus(201);
      res.setContentType("text/plain;charset=UTF-8");
      res.getWriter().write(out.toString());
    }
  }

  void start(MultipartConfigElement multipart, Filter... before) throws Exception {
    server = new TestServer(IdempotencyFilterConfig.builder(store).maxBodyBytes(64 * 1024).build(), app, multipart, before);
  }

  MultipartConfigElement multipartConfig() {
    // small enough that the larger file goes to a temporary file, as uploads usually do
    return new MultipartConfigElement(uploads.toString(), 32 * 1024, 48 * 1024, 1024);
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  HttpResponse<String> post(String path, String key, String contentType, byte[] body) throws Exception {
    HttpRequest request = server.request(path).header("Idempotency-Key", key).header("Content-Type", contentType)
        .POST(BodyPublishers.ofByteArray(body)).build();
    return server.client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  static String sha(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)).substring(0, 12);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A multipart/form-data body (RFC 7578) with a title field and a file, under {@code boundary}. */
  static byte[] multipart(String boundary, String title, byte[] file) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    String head = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n" + title + "\r\n"
        + "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.bin\"\r\n"
        + "Content-Type: application/octet-stream\r\n\r\n";
    out.writeBytes(head.getBytes(StandardCharsets.UTF_8));
    out.writeBytes(file);
    out.writeBytes(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.US_ASCII));
    return out.toByteArray();
  }

  static byte[] file(int size, int seed) {
    byte[] b = new byte[size];
    new Random(seed).nextBytes(b);
    return b;
  }

  static String multipartType(String boundary) {
    return "multipart/form-data; boundary=" + boundary;
  }

  // ---- multipart/form-data ----------------------------------------------------------------

  /**
   * The fault: a {@code multipart/form-data} request on a key route answered 500 ("the filter
   * consumed the body"). Now the container parses it with the servlet's multipart configuration
   * and the handler reads its parts and fields as without the filter; a retry with another boundary
   * (clients pick a new one per attempt) is the same request and replays.
   */
  @Test
  void multipartBodyOnAKeyRouteReachesGetPartsInsteadOfA500() throws Exception {
    start(multipartConfig());
    byte[] file = file(20_000, 1); // over the 1 KiB threshold: a temporary file
    HttpResponse<String> first = post("/upload", "up-1", multipartType("b0undary-a"), multipart("b0undary-a", "Tëst", file));
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("run 1\ntitle=Tëst\n"
        + "title null null 5 " + sha("Tëst".getBytes(StandardCharsets.UTF_8)) + "\n"
        + "file notes.bin application/octet-stream 20000 " + sha(file) + "\nfile=notes.bin");

    HttpResponse<String> retry = post("/upload", "up-1", multipartType("other-boundary-7"), multipart("other-boundary-7", "Tëst", file));
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(app.calls("/upload")).isEqualTo(1);
  }

  @Test
  void anotherFileOrFieldUnderTheSameKeyIsAReuse() throws Exception {
    start(multipartConfig());
    byte[] file = file(2_000, 2);
    assertThat(post("/upload", "up-2", multipartType("b1"), multipart("b1", "a", file)).statusCode()).isEqualTo(201);
    byte[] changed = file.clone();
    changed[1999] ^= 1;
    assertThat(post("/upload", "up-2", multipartType("b1"), multipart("b1", "a", changed)).statusCode()).isEqualTo(422);
    assertThat(post("/upload", "up-2", multipartType("b1"), multipart("b1", "b", file)).statusCode()).isEqualTo(422);
    assertThat(app.calls("/upload")).isEqualTo(1);
  }

  @Test
  void aMalformedMultipartBodyIs400AndTheHandlerDoesNotRun() throws Exception {
    start(multipartConfig());
    byte[] broken = "--b2\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nno closing boundary".getBytes(StandardCharsets.US_ASCII);
    HttpResponse<String> response = post("/upload", "up-3", multipartType("b2"), broken);
    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body()).contains("payload-invalid", "cannot be read");
    assertThat(app.calls("/upload")).isZero();
    assertThat(store.size()).isZero();
  }

  @Test
  void aPartOverTheServletsLimitIs413AndTheHandlerDoesNotRun() throws Exception {
    start(multipartConfig());
    byte[] file = file(40_000, 3); // over the servlet's 32 KiB per file, under the filter's 64 KiB
    HttpResponse<String> response = post("/upload", "up-4", multipartType("b3"), multipart("b3", "big", file));
    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(response.body()).contains("body-too-large");
    assertThat(app.calls("/upload")).isZero();
  }

  /**
   * A servlet without a multipart configuration cannot call {@code getParts()} (with or without
   * the filter) and reads the bytes itself: the filter leaves them readable and fingerprints them.
   */
  @Test
  void withoutAMultipartConfigurationTheBytesStayReadable() throws Exception {
    start(null);
    byte[] body = multipart("b4", "raw", file(3_000, 4));
    HttpResponse<String> first = post("/raw-multipart", "up-5", multipartType("b4"), body);
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("run 1\nraw-multipart " + body.length + " " + sha(body));
    HttpResponse<String> retry = post("/raw-multipart", "up-5", multipartType("b4"), body);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(app.calls("/raw-multipart")).isEqualTo(1);
  }

  // ---- the other bodies -------------------------------------------------------------------

  @Test
  void jsonIsReadableAndAnEquivalentSpellingReplays() throws Exception {
    start(multipartConfig());
    HttpResponse<String> first = post("/json", "j-1", "application/json", "{\"a\":1,\"b\":\"ü\"}".getBytes(StandardCharsets.UTF_8));
    assertThat(first.body()).isEqualTo("run 1\njson {\"a\":1,\"b\":\"ü\"}");
    HttpResponse<String> retry = post("/json", "j-1", "application/json", "{ \"b\": \"ü\", \"a\": 1 }".getBytes(StandardCharsets.UTF_8));
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(post("/json", "j-1", "application/json", "{\"a\":2,\"b\":\"ü\"}".getBytes(StandardCharsets.UTF_8)).statusCode())
        .isEqualTo(422);
    assertThat(app.calls("/json")).isEqualTo(1);
  }

  @Test
  void aFormIsReadableThroughGetParameterWithRepeatedFieldsAndTheQuery() throws Exception {
    start(multipartConfig());
    String type = "application/x-www-form-urlencoded";
    byte[] form = "title=Hello+W%C3%B6rld&tag=a&tag=b".getBytes(StandardCharsets.US_ASCII);
    HttpResponse<String> first = post("/form?lang=de", "f-1", type, form);
    assertThat(first.body()).isEqualTo("run 1\ntitle=Hello Wörld tags=a,b lang=de");
    assertThat(post("/form?lang=de", "f-1", type, form).headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(post("/form?lang=de", "f-1", type, "title=Other&tag=a&tag=b".getBytes(StandardCharsets.US_ASCII)).statusCode())
        .isEqualTo(422);
    assertThat(app.calls("/form")).isEqualTo(1);
  }

  @Test
  void reorderedFormFieldsAreAReplayNotAReusedKey() throws Exception {
    start(multipartConfig());
    String type = "application/x-www-form-urlencoded";
    HttpResponse<String> first = post("/form", "f-order", type, "title=One&tag=a&tag=b".getBytes(StandardCharsets.US_ASCII));
    assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
    HttpResponse<String> reordered = post("/form", "f-order", type, "tag=a&title=One&tag=b".getBytes(StandardCharsets.US_ASCII));
    assertThat(reordered.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(reordered.body()).isEqualTo(first.body());
    assertThat(post("/form", "f-order", type, "tag=b&title=One&tag=a".getBytes(StandardCharsets.US_ASCII)).statusCode())
        .as("repeated fields in another order are another list").isEqualTo(422);
    assertThat(post("/form", "f-order", type, "title=One%26tag%3Da&tag=b".getBytes(StandardCharsets.US_ASCII)).statusCode())
        .as("an encoded delimiter is data").isEqualTo(422);
    assertThat(app.calls("/form")).isEqualTo(1);
  }

  @Test
  void binaryIsReadableByteForByte() throws Exception {
    start(multipartConfig());
    byte[] bytes = new byte[512];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) i;
    }
    HttpResponse<String> first = post("/binary", "b-1", "application/octet-stream", bytes);
    assertThat(first.body()).isEqualTo("run 1\nbinary 512 " + sha(bytes));
    assertThat(post("/binary", "b-1", "application/octet-stream", bytes).headers().firstValue("Idempotent-Replayed")).hasValue("true");
    bytes[511] ^= 1;
    assertThat(post("/binary", "b-1", "application/octet-stream", bytes).statusCode()).isEqualTo(422);
    assertThat(app.calls("/binary")).isEqualTo(1);
  }

  /**
   * A filter before Idem that reads a form parameter (as a CSRF check or a hidden-method filter
   * does) makes the container consume the body first. The handler must still see the fields, and
   * another form under the same key must still be a reuse, not a replay of the first answer.
   */
  @Test
  void aFormAlreadyParsedByAnEarlierFilterIsStillReadableAndFingerprinted() throws Exception {
    Filter csrf = (request, response, chain) -> {
      request.getParameter("csrf");
      chain.doFilter(request, response);
    };
    start(multipartConfig(), csrf);
    String type = "application/x-www-form-urlencoded";
    HttpResponse<String> first = post("/form?lang=fr", "f-2", type, "csrf=t&title=One&tag=x".getBytes(StandardCharsets.US_ASCII));
    assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
    assertThat(first.body()).isEqualTo("run 1\ntitle=One tags=x lang=fr");
    assertThat(post("/form?lang=fr", "f-2", type, "csrf=t&title=One&tag=x".getBytes(StandardCharsets.US_ASCII))
        .headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(post("/form?lang=fr", "f-2", type, "csrf=t&title=Two&tag=x".getBytes(StandardCharsets.US_ASCII)).statusCode())
        .as("another form is another request").isEqualTo(422);
    assertThat(app.calls("/form")).isEqualTo(1);
  }
}
