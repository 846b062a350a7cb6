package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The benchmark-only floor endpoint ({@code notes.benchmark.floor-endpoint=true}, Idem off): a
 * create, then its replay with the same key and body answers the same status and body without a
 * second note; another body under that key is a 422.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"notes.benchmark.floor-endpoint=true", "idem.enabled=false"})
@DirtiesContext
class FloorBenchmarkEndpointTest {

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
  }

  @LocalServerPort int port;
  @Autowired NoteRepository notes;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  private HttpResponse<String> post(String key, String json) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/bench/floor/notes"))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(json))
        .build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aReplayAnswersTheFirstBodyAndAnotherBodyUnderTheKeyIs422() throws Exception {
    String key = UUID.randomUUID().toString();
    long before = notes.count();

    HttpResponse<String> first = post(key, "{\"title\":\"floor \\\"one\\\"\"}");
    HttpResponse<String> replay = post(key, "{\"title\":\"floor \\\"one\\\"\"}");
    HttpResponse<String> other = post(key, "{\"title\":\"floor two\"}");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).matches("\\{\"id\":\\d+,\"title\":\"floor \\\\\"one\\\\\"\"}");
    long id = Long.parseLong(first.body().replaceAll("\\D*(\\d+).*", "$1"));
    assertThat(first.headers().firstValue("Location")).contains("/notes/" + id);
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(other.statusCode()).isEqualTo(422);
    assertThat(notes.count()).as("one note for the key").isEqualTo(before + 1);
    assertThat(notes.findById(id)).contains(new Note(id, "floor \"one\""));
  }

  @Test
  void aNewKeyCreatesANewNote() throws Exception {
    HttpResponse<String> a = post(UUID.randomUUID().toString(), "{\"title\":\"same\"}");
    HttpResponse<String> b = post(UUID.randomUUID().toString(), "{\"title\":\"same\"}");

    assertThat(a.statusCode()).isEqualTo(201);
    assertThat(b.statusCode()).isEqualTo(201);
    assertThat(b.body()).isNotEqualTo(a.body());
  }
}
