package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * With {@code notes.users} and {@code idem.principal=servlet}, each user's keys have a scope of
 * their own: bob sending alice's key with alice's body gets a note of his own, never alice's stored
 * answer; alice's retry is still replayed. Wrong credentials are a 401.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"notes.users=alice:alice-secret,bob:bob-secret", "idem.principal=servlet"})
@DirtiesContext
class UsersScopeTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
  }

  @LocalServerPort int port;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  private HttpResponse<String> post(String authorization, String key, String title) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/notes"))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("{\"title\":" + Api.jsonString(title) + "}"));
    if (authorization != null) {
      b.header("Authorization", authorization);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String basic(String user, String password) {
    return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void anotherUserSendingTheSameKeyAndBodyGetsANoteOfItsOwnNotTheFirstUsersAnswer() throws Exception {
    String key = "\"" + UUID.randomUUID() + "\"";

    HttpResponse<String> alice = post(basic("alice", "alice-secret"), key, "same body");
    HttpResponse<String> bob = post(basic("bob", "bob-secret"), key, "same body");
    HttpResponse<String> anonymous = post(null, key, "same body");
    HttpResponse<String> aliceAgain = post(basic("alice", "alice-secret"), key, "same body");

    assertThat(alice.statusCode()).isEqualTo(201);
    assertThat(bob.statusCode()).isEqualTo(201);
    assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(anonymous.statusCode()).isEqualTo(201);
    long aliceId = JSON.readTree(alice.body()).path("id").asLong();
    assertThat(JSON.readTree(bob.body()).path("id").asLong()).as("bob's note").isNotEqualTo(aliceId);
    assertThat(JSON.readTree(anonymous.body()).path("id").asLong()).as("the anonymous caller's note").isNotIn(aliceId,
        JSON.readTree(bob.body()).path("id").asLong());
    assertThat(aliceAgain.body()).as("alice's retry is replayed").isEqualTo(alice.body());
    assertThat(aliceAgain.headers().firstValue("Idempotent-Replayed")).hasValue("true");
  }

  @ParameterizedTest
  @ValueSource(strings = {"Basic", "Basic !!!", "Bearer abc", "Basic Ym9i", "Basic Ym9iOndyb25n", "Basic Y2Fyb2w6eA=="})
  void malformedOrWrongCredentialsAreRefusedWith401(String authorization) throws Exception {
    HttpResponse<String> r = post(authorization, "\"" + UUID.randomUUID() + "\"", "refused");

    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(r.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(v -> assertThat(v).startsWith("Basic"));
  }
}
