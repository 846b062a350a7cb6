package dev.idem.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The key status document as the client reads it: the endpoint's two shapes, and anything else refused. */
class ServerKeyStatusTest {

  private static byte[] json(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void readsACompletedAndAnInProgressDocument() {
    ServerKeyStatus done = ServerKeyStatus.parse(json(
        "{\"state\":\"completed\",\"status\":201,\"completedAt\":\"2026-12-02T05:40:00.123Z\",\"expiresAt\":\"2026-12-03T05:40:00.123Z\"}"))
        .orElseThrow();
    assertThat(done.state()).isEqualTo(ServerKeyStatus.State.COMPLETED);
    assertThat(done.status()).isEqualTo(201);
    assertThat(done.completedAt()).isEqualTo(Instant.parse("2026-12-02T05:40:00.123Z"));
    assertThat(done.expiresAt()).isEqualTo(Instant.parse("2026-12-03T05:40:00.123Z"));

    ServerKeyStatus running = ServerKeyStatus.parse(json(
        "{\"state\":\"in_progress\",\"leaseUntil\":\"2026-12-02T05:40:30Z\",\"retryAfterSeconds\":3,\"step\":\"charge\",\"extra\":[1,{}]}"))
        .orElseThrow();
    assertThat(running.state()).isEqualTo(ServerKeyStatus.State.IN_PROGRESS);
    assertThat(running.retryAfter()).isEqualTo(Duration.ofSeconds(3));
    assertThat(running.step()).isEqualTo("charge");
    assertThat(running.status()).isEqualTo(-1);
  }

  @Test
  void refusesWhatIsNotTheEndpointsDocument() {
    for (String body : new String[] {"", "[]", "{", "{\"state\":\"absent\"}", "{\"state\":\"completed\",\"status\":201}",
        "{\"state\":\"completed\",\"status\":99,\"expiresAt\":\"2026-12-03T05:40:00Z\"}",
        "{\"state\":\"completed\",\"status\":201,\"expiresAt\":\"tomorrow\"}",
        "{\"state\":\"in_progress\",\"leaseUntil\":\"2026-12-02T05:40:30Z\"}",
        "{\"state\":\"in_progress\",\"leaseUntil\":\"2026-12-02T05:40:30Z\",\"retryAfterSeconds\":-1}"}) {
      assertThat(ServerKeyStatus.parse(json(body))).as(body).isEmpty();
    }
  }

  @Test
  void readsTheNotFoundProblemsState() {
    assertThat(ServerKeyStatus.parse(json("{\"type\":\"urn:idem:problem:idempotency-key-not-found\",\"status\":404,"
        + "\"state\":\"not_found\"}"))).hasValueSatisfying(s -> assertThat(s.state()).isEqualTo(ServerKeyStatus.State.NOT_FOUND));
    assertThat(ServerKeyStatus.parse(json("{\"type\":\"urn:idem:problem:idempotency-key-not-found\",\"status\":404}"))).isEmpty();
  }
}
