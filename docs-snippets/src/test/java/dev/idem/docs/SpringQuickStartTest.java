package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.check.CheckReport;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.OperationResult;
import dev.idem.docs.spring.NotesApplication;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Runs the README's Spring Boot quick start: {@code NotesController} with the starter and
 * spring-boot-starter-jdbc on SQLite, with the properties and the schema.sql the README gives; then the client's
 * snippets and {@code idem check} against it.
 */
@SpringBootTest(classes = NotesApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.principal=shared", "idem.required-key-routes=POST /notes", "spring.sql.init.mode=always"})
class SpringQuickStartTest {

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> "jdbc:sqlite:" + dir.resolve("notes.db") + "?journal_mode=WAL&busy_timeout=10000");
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;

  private HttpResponse<String> post(String key, String json) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/notes"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private long notes(String title) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE title = ?", Long.class, title);
  }

  @Test
  void aRetryWithTheSameKeyIsReplayedAndStoresOneNote() throws Exception {
    HttpResponse<String> first = post("quick-start-1", "{\"title\":\"Read later\"}");
    HttpResponse<String> retry = post("quick-start-1", "{\"title\":\"Read later\"}");
    HttpResponse<String> other = post("quick-start-1", "{\"title\":\"Something else\"}");
    HttpResponse<String> none = post(null, "{\"title\":\"Read later\"}");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(other.statusCode()).isEqualTo(422);
    assertThat(none.statusCode()).isEqualTo(400);
    assertThat(notes("Read later")).isEqualTo(1);
  }

  @Test
  void theClientSnippetsKeepOneKeyAcrossALostResponse() throws Exception {
    IdempotentHttpClient client = ClientSnippets.client(dir.resolve("pending"));
    OperationResult sent = ClientSnippets.send(client, URI.create("http://127.0.0.1:" + port + "/notes"));
    assertThat(sent).isNotNull();
    assertThat(sent.status()).isEqualTo(201);

    long before = notes("milk");
    OperationResult lost = ClientSnippets.lostResponse(client, port);
    assertThat(lost.attempts()).isEqualTo(2);
    assertThat(lost.replayed()).isTrue();
    assertThat(notes("milk")).isEqualTo(before + 1);
  }

  @Test
  void idemCheckPassesAgainstTheQuickStart() throws Exception {
    CheckReport report = IdemCheckSnippets.check("http://127.0.0.1:" + port, jdbc);
    assertThat(report.exitStatus()).isZero();
  }
}
