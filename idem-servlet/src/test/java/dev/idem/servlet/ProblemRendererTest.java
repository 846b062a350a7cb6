package dev.idem.servlet;

import static dev.idem.servlet.IdempotencyFilterTest.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Applications with an error format of their own render Idem's refusals with a {@link
 * ProblemRenderer}; the status, {@code Retry-After} and the key's echo stay Idem's.
 */
class ProblemRendererTest {

  TestServer server;
  TestApp app = new TestApp();

  @AfterEach
  void stop() {
    app.release.countDown();
    if (server != null) {
      server.close();
    }
  }

  private void start(ProblemRenderer renderer) throws Exception {
    IdempotencyFilterConfig.Builder config = IdempotencyFilterConfig.builder(new InMemoryLeaseStore())
        .required("POST", "/notes")
        .maxBodyBytes(1024);
    if (renderer != null) {
      config.problemRenderer(renderer);
    }
    server = new TestServer(config.build(), app);
  }

  private HttpResponse<byte[]> post(String key, String body) throws Exception {
    var request = server.request("/notes").header("Content-Type", "application/json")
        .POST(BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return server.send(request.build());
  }

  /** An application's own format: {"error":{"code":...,"message":...}} as application/json. */
  static final ProblemRenderer OWN_FORMAT = (problem, response) -> {
    byte[] body = ("{\"error\":{\"code\":\"" + problem.name() + "\",\"message\":\"" + problem.title() + "\"}}")
        .getBytes(StandardCharsets.UTF_8);
    response.setStatus(problem.status());
    response.setContentType("application/json");
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  };

  @Test
  void theApplicationsRendererWritesIdemsRefusalsAndKeepsTheirStatus() throws Exception {
    start(OWN_FORMAT);
    HttpResponse<byte[]> missing = post(null, "{\"title\":\"a\"}");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    assertThat(new String(missing.body(), StandardCharsets.UTF_8))
        .isEqualTo("{\"error\":{\"code\":\"idempotency-key-missing\",\"message\":\"Idempotency-Key is missing\"}}");

    assertThat(post("k-1", "{\"title\":\"a\"}").statusCode()).isEqualTo(201);
    HttpResponse<byte[]> reused = post("k-1", "{\"title\":\"b\"}");
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(new String(reused.body(), StandardCharsets.UTF_8)).contains("\"code\":\"idempotency-key-reused\"");
    assertThat(reused.headers().firstValue("Idempotency-Key")).hasValue("k-1");
  }

  @Test
  void aRendererThatFailsIsReplacedByProblemDetailsNeverA500() throws Exception {
    start((problem, response) -> {
      throw new IllegalStateException("the application's renderer is broken");
    });
    HttpResponse<byte[]> missing = post(null, "{\"title\":\"a\"}");
    assertProblem(missing, 400, IdempotencyFilter.PROBLEM_KEY_MISSING);
  }

  @Test
  void withoutARendererIdemsRefusalsAreProblemDetails() throws Exception {
    start(null);
    assertProblem(post(null, "{\"title\":\"a\"}"), 400, IdempotencyFilter.PROBLEM_KEY_MISSING);
  }
}
