package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The notes service turns the key status endpoint on ({@code idem.key-status.enabled=true} in its
 * application.properties). With users, a caller learns the fate of its own saves only: alice's
 * completed save reads as completed with its status and times; bob asking about alice's key, and
 * anyone asking about an unknown or expired key, get the same 404 bytes.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"notes.users=alice:alice-secret,bob:bob-secret", "idem.principal=servlet"})
@DirtiesContext
class KeyStatusTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String OPERATION = URLEncoder.encode("POST /notes", StandardCharsets.UTF_8).replace("+", "%20");

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  private static String basic(String user) {
    return "Basic " + Base64.getEncoder().encodeToString((user + ":" + user + "-secret").getBytes(StandardCharsets.UTF_8));
  }

  private HttpResponse<String> save(String user, String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/notes"))
        .timeout(Duration.ofSeconds(30)).header("Authorization", basic(user)).header("Content-Type", "application/json")
        .header("Idempotency-Key", key).POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"status\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> status(String user, String key) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/idempotency-keys/" + key
        + "?operation=" + OPERATION)).timeout(Duration.ofSeconds(30)).GET();
    if (user != null) {
      b.header("Authorization", basic(user));
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aCallerReadsItsOwnCompletedSaveAndNothingOfAnotherUsersKeys() throws Exception {
    String key = UUID.randomUUID().toString();
    Instant before = Instant.now().minusSeconds(5);
    assertThat(save("alice", key).statusCode()).isEqualTo(201);

    HttpResponse<String> own = status("alice", key);
    assertThat(own.statusCode()).as(own.body()).isEqualTo(200);
    assertThat(own.headers().firstValue("Cache-Control")).hasValue("no-store");
    JsonNode body = JSON.readTree(own.body());
    assertThat(body.path("state").asText()).isEqualTo("completed");
    assertThat(body.path("status").asInt()).isEqualTo(201);
    Instant completedAt = Instant.parse(body.path("completedAt").asText());
    Instant expiresAt = Instant.parse(body.path("expiresAt").asText());
    assertThat(completedAt).isAfter(before);
    assertThat(Duration.between(completedAt, expiresAt)).as("idem.retention, 24 h by default, and at most 1 min more")
        .isBetween(Duration.ofHours(24), Duration.ofHours(24).plusMinutes(1));

    HttpResponse<String> bobs = status("bob", key);
    HttpResponse<String> anonymous = status(null, key);
    HttpResponse<String> unknown = status("alice", UUID.randomUUID().toString());
    jdbc.update("UPDATE idem_keys SET expires_at = 0 WHERE idem_key = ?", key);
    HttpResponse<String> expired = status("alice", key);
    for (HttpResponse<String> r : java.util.List.of(bobs, anonymous, unknown, expired)) {
      assertThat(r.statusCode()).isEqualTo(404);
      assertThat(r.body()).isEqualTo(unknown.body());
      assertThat(r.headers().firstValue("Content-Type")).isEqualTo(unknown.headers().firstValue("Content-Type"));
    }
    assertThat(unknown.headers().firstValue("Content-Type")).hasValue("application/problem+json");
  }

  @Test
  void aMalformedKeyIsTheFiltersProblem() throws Exception {
    HttpResponse<String> r = status("alice", "x".repeat(256));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("idempotency-key-malformed").doesNotContain("Exception");
  }
}
