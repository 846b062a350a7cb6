package dev.idem.examples.notes.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.lab.NotesServiceProcess;
import dev.idem.testkit.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The benchmark-only floor endpoint of the WebFlux service ({@code notes.benchmark.floor-endpoint=true},
 * Idem off), under BlockHound as every test of the module: a create, then its replay with the same
 * key and body answers the same status and body without a second note, another body under that key
 * is a 422; concurrent requests with one key create one note and all answer it.
 */
@SpringBootTest(classes = NotesWebFluxApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"notes.benchmark.floor-endpoint=true", "idem.enabled=false"})
@DirtiesContext
class FloorBenchmarkEndpointTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    NotesServiceProcess.r2dbcProperties(DB.url()).forEach((property, value) -> registry.add(property, () -> value));
  }

  @LocalServerPort int port;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  private HttpRequest post(String key, String json) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/bench/floor/notes"))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString(json))
        .build();
  }

  private HttpResponse<String> send(String key, String json) throws Exception {
    return http.send(post(key, json), HttpResponse.BodyHandlers.ofString());
  }

  private static long notes(String where) throws Exception {
    try (Connection c = DB.target().open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM notes" + where)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void aReplayAnswersTheFirstBodyAndAnotherBodyUnderTheKeyIs422() throws Exception {
    String key = UUID.randomUUID().toString();
    long before = notes("");

    HttpResponse<String> first = send(key, "{\"title\":\"floor \\\"one\\\"\"}");
    HttpResponse<String> replay = send(key, "{\"title\":\"floor \\\"one\\\"\"}");
    HttpResponse<String> other = send(key, "{\"title\":\"floor two\"}");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).matches("\\{\"id\":\\d+,\"title\":\"floor \\\\\"one\\\\\"\"}");
    long id = Long.parseLong(first.body().replaceAll("\\D*(\\d+).*", "$1"));
    assertThat(first.headers().firstValue("Location")).contains("/notes/" + id);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(other.statusCode()).isEqualTo(422);
    assertThat(notes("")).as("one note for the key").isEqualTo(before + 1);
    assertThat(notes(" WHERE id = " + id + " AND title = 'floor \"one\"'")).isEqualTo(1);
  }

  @Test
  void concurrentRequestsWithOneKeyCreateOneNoteAndAllAnswerIt() throws Exception {
    for (int attempt = 0; attempt < 5; attempt++) {
      String key = UUID.randomUUID().toString();
      long before = notes("");
      List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        answers.add(http.sendAsync(post(key, "{\"title\":\"concurrent\"}"), HttpResponse.BodyHandlers.ofString()));
      }
      List<HttpResponse<String>> all = answers.stream().map(CompletableFuture::join).toList();

      assertThat(all).allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(201));
      assertThat(all).extracting(HttpResponse::body).containsOnly(all.get(0).body());
      assertThat(notes("")).as("one note for the key, attempt %d", attempt).isEqualTo(before + 1);
    }
  }

  @Test
  void aNewKeyCreatesANewNote() throws Exception {
    HttpResponse<String> a = send(UUID.randomUUID().toString(), "{\"title\":\"same\"}");
    HttpResponse<String> b = send(UUID.randomUUID().toString(), "{\"title\":\"same\"}");

    assertThat(a.statusCode()).isEqualTo(201);
    assertThat(b.statusCode()).isEqualTo(201);
    assertThat(b.body()).isNotEqualTo(a.body());
  }
}
