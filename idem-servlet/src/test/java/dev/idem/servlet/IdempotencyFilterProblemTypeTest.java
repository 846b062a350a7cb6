package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import java.net.URI;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link IdempotencyFilterConfig.Builder#problemTypeBase(URI)} and {@link
 * IdempotencyFilterConfig.Builder#aboutBlankProblemTypes()} on embedded Jetty 12: the {@code type}
 * member of the filter's own RFC 9457 problems.
 */
class IdempotencyFilterProblemTypeTest {

  TestApp app = new TestApp();
  TestServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  void start(IdempotencyFilterConfig.Builder config) throws Exception {
    server = new TestServer(config.required("POST", "/required").optional("POST", "/**").maxBodyBytes(16).build(), app);
  }

  HttpResponse<byte[]> post(String path, String key, String json) throws Exception {
    var b = server.request(path).header("Content-Type", "application/json").POST(BodyPublishers.ofString(json));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return server.send(b.build());
  }

  static String text(HttpResponse<byte[]> r) {
    return new String(r.body(), StandardCharsets.UTF_8);
  }

  @Test
  void theDefaultBaseGivesTheDocumentedTypeUris() throws Exception {
    start(IdempotencyFilterConfig.builder(new InMemoryLeaseStore()));
    assertThat(text(post("/required", null, "{}")))
        .startsWith("{\"type\":\"urn:idem:problem:idempotency-key-missing\",\"title\":\"Idempotency-Key is missing\",");
  }

  @Test
  void aConfiguredBaseReplacesTheDefaultInEveryProblem() throws Exception {
    start(IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).problemTypeBase(URI.create("https://api.example.com/errors/")));
    HttpResponse<byte[]> missing = post("/required", null, "{}");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(text(missing)).startsWith(
        "{\"type\":\"https://api.example.com/errors/idempotency-key-missing\",\"title\":\"Idempotency-Key is missing\",\"status\":400,\"detail\":");
    assertThat(text(post("/notes", "\"broken", "{}"))).contains("\"type\":\"https://api.example.com/errors/idempotency-key-malformed\"");
    assertThat(text(post("/notes", "k-json", "{"))).contains("\"type\":\"https://api.example.com/errors/payload-invalid\"");
    assertThat(text(post("/notes", "k-big", "\"" + "x".repeat(20) + "\""))).contains("\"type\":\"https://api.example.com/errors/body-too-large\"");
    assertThat(post("/notes", "k-reuse", "{\"a\":1}").statusCode()).isEqualTo(201);
    HttpResponse<byte[]> reused = post("/notes", "k-reuse", "{\"a\":2}");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(text(reused)).contains("\"type\":\"https://api.example.com/errors/idempotency-key-reused\"");
    assertThat(text(reused)).doesNotContain("idem.dev");
  }

  @Test
  void aboutBlankLeavesTheTypeOutAndUsesTheReasonPhraseAsTitle() throws Exception {
    start(IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).aboutBlankProblemTypes());
    HttpResponse<byte[]> missing = post("/required", null, "{}");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(text(missing)).startsWith("{\"title\":\"Bad Request\",\"status\":400,\"detail\":\"POST /required requires an Idempotency-Key");
    assertThat(text(missing)).doesNotContain("\"type\"");

    HttpResponse<byte[]> tooLarge = post("/notes", "k-big", "\"" + "x".repeat(20) + "\"");
    assertThat(tooLarge.statusCode()).isEqualTo(413);
    assertThat(text(tooLarge)).startsWith("{\"title\":\"Content Too Large\",\"status\":413,\"detail\":");

    assertThat(post("/notes", "k-reuse", "{\"a\":1}").statusCode()).isEqualTo(201);
    HttpResponse<byte[]> reused = post("/notes", "k-reuse", "{\"a\":2}");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(text(reused)).startsWith("{\"title\":\"Unprocessable Content\",\"status\":422,\"detail\":");
  }
}
