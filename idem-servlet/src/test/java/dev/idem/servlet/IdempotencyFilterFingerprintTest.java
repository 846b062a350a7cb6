package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What of a request the filter's fingerprint covers: two requests with one key are a replay only
 * when they ask for the same thing, whatever the spelling of their JSON or media type.
 */
class IdempotencyFilterFingerprintTest {

  InMemoryLeaseStore store;
  TestApp app;
  TestServer server;

  @BeforeEach
  void start() throws Exception {
    store = new InMemoryLeaseStore();
    app = new TestApp();
    IdempotencyFilterConfig config = IdempotencyFilterConfig.builder(store)
        .optional("POST", "/**")
        .optional("PATCH", "/notes/*")
        .build();
    server = new TestServer(config, app);
  }

  @AfterEach
  void stop() {
    app.release.countDown();
    server.close();
  }

  HttpResponse<byte[]> send(String method, String path, String key, String contentType, String encoding, String body)
      throws Exception {
    HttpRequest.Builder b = server.request(path).method(method, BodyPublishers.ofString(body, StandardCharsets.UTF_8))
        .header("Idempotency-Key", key);
    if (contentType != null) {
      b.header("Content-Type", contentType);
    }
    if (encoding != null) {
      b.header("Content-Encoding", encoding);
    }
    return server.send(b.build());
  }

  HttpResponse<byte[]> post(String key, String contentType, String body) throws Exception {
    return send("POST", "/notes", key, contentType, null, body);
  }

  static void assertReplay(HttpResponse<byte[]> r) {
    assertThat(r.statusCode()).isEqualTo(201);
    assertThat(r.headers().firstValue("Idempotent-Replayed")).contains("true");
  }

  static void assertReused(HttpResponse<byte[]> r) {
    assertThat(r.statusCode()).isEqualTo(422);
    assertThat(new String(r.body(), StandardCharsets.UTF_8)).contains(IdempotencyFilter.PROBLEM_KEY_REUSED);
  }

  @Test
  void sameBytesAsJsonThenTextPlainIsNotAReplay() throws Exception {
    String canonical = "{\"title\":\"a\"}";
    assertThat(post("media-1", "application/json", canonical).statusCode()).isEqualTo(201);
    assertReused(post("media-1", "text/plain", canonical));
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void sameBytesAsJsonThenTextPlainWithNonCanonicalSpacingIsNotAReplay() throws Exception {
    String spaced = " { \"title\" : \"a\" } ";
    assertThat(post("media-2", "application/json", spaced).statusCode()).isEqualTo(201);
    assertReused(post("media-2", "text/plain", spaced));
    // and the other way round
    assertThat(post("media-3", "text/plain", spaced).statusCode()).isEqualTo(201);
    assertReused(post("media-3", "application/json", spaced));
    assertThat(app.calls("POST /notes")).isEqualTo(2);
  }

  @Test
  void bodyWithoutContentTypeIsNotAJsonRequest() throws Exception {
    String canonical = "{\"title\":\"a\"}";
    assertThat(post("media-4", null, canonical).statusCode()).isEqualTo(201);
    assertReused(post("media-4", "application/json", canonical));
    assertReplay(post("media-4", null, canonical));
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void spellingsOfTheJsonMediaTypeAreTheSameRequest() throws Exception {
    assertThat(post("media-5", "application/json", "{\"title\":\"a\",\"n\":1}").statusCode()).isEqualTo(201);
    assertReplay(post("media-5", "Application/JSON; charset=UTF-8", " {\"n\":1.0, \"title\":\"\\u0061\"}"));
    assertReplay(post("media-5", "application/json;charset=\"utf-8\"", "{\"title\":\"a\",\"n\":10e-1}"));
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void textCharsetIsPartOfTheRequest() throws Exception {
    assertThat(post("media-6", "text/plain; charset=UTF-8", "x").statusCode()).isEqualTo(201);
    assertReplay(post("media-6", "TEXT/plain;CHARSET=utf-8", "x"));
    assertReused(post("media-6", "text/plain", "x"));
    assertReused(post("media-6", "text/plain; charset=iso-8859-1", "x"));
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void bigIntegersBeyondDoublePrecisionAreNotAReplay() throws Exception {
    assertThat(post("big2", "application/json", "{\"title\":\"big\",\"account\":1234567890123456789}").statusCode())
        .isEqualTo(201);
    assertReused(post("big2", "application/json", "{\"title\":\"big\",\"account\":1234567890123456700}"));
    assertReplay(post("big2", "application/json", "{\"account\":1234567890123456789.0,\"title\":\"big\"}"));
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void sameBytesWithAndWithoutAContentCodingAreNotAReplay() throws Exception {
    assertThat(send("POST", "/notes", "coding-1", "application/octet-stream", null, "abc").statusCode()).isEqualTo(201);
    assertReused(send("POST", "/notes", "coding-1", "application/octet-stream", "x-custom", "abc"));
    assertThat(send("POST", "/notes", "coding-2", "application/octet-stream", "x-custom", "abc").statusCode()).isEqualTo(201);
    assertReplay(send("POST", "/notes", "coding-2", "application/octet-stream", "X-Custom", "abc"));
    assertThat(app.calls("POST /notes")).isEqualTo(2);
  }

  @Test
  void escapedQuestionMarkInThePathIsNotAQuery() throws Exception {
    // decoded, both are "/notes/x?a=1": the target as sent tells them apart
    HttpResponse<byte[]> first = send("PATCH", "/notes/x%3Fa=1", "target-1", "application/json", null, "{}");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertReused(send("PATCH", "/notes/x?a=1", "target-1", "application/json", null, "{}"));
    assertThat(app.calls("PATCH /notes/x")).isZero();
  }

  @Test
  void queryParametersInAnotherOrderOrEncodingAreNotAReplay() throws Exception {
    assertThat(send("POST", "/notes?a=1&b=x+y", "query-1", "application/json", null, "{}").statusCode()).isEqualTo(201);
    assertReused(send("POST", "/notes?b=x+y&a=1", "query-1", "application/json", null, "{}"));
    assertReused(send("POST", "/notes?a=1&b=x%20y", "query-1", "application/json", null, "{}"));
    assertReused(send("POST", "/notes?a=1&b=x+y&a=1", "query-1", "application/json", null, "{}"));
    assertReplay(send("POST", "/notes?a=1&b=x+y", "query-1", "application/json", null, "{}"));
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }
}
