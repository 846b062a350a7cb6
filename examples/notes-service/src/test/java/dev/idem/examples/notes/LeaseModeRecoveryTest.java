package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.spring.IdemStoreDecorator;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Lease mode: the note is inserted, and then the completion never happens (the process crashed, or
 * the store could not record it). After the lease the retry takes the claim over as a recovery and
 * must answer with the same note, not insert a second one.
 */
// idem.key-status.enabled=false: the crashing decorator below reads no key statuses, and with the
// endpoint on, a decorated store needs a KeyStatusReader bean of the application's (the start-up
// refuses otherwise); the endpoint is not what this test is about.
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"idem.mode=lease", "idem.lease=1s", "idem.in-progress=fail-fast", "idem.key-status.enabled=false"})
@DirtiesContext
class LeaseModeRecoveryTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration LEASE = Duration.ofSeconds(1);

  @TempDir static Path dir;

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> Api.sqliteUrl(dir));
  }

  /** Keys whose first owner's completions never reach the store: its process "crashed" after the insert. */
  static final Map<String, String> DOOMED_OWNER = new ConcurrentHashMap<>();

  @TestConfiguration
  static class CrashingCompletions {
    @Bean
    IdemStoreDecorator crashAfterTheEffect() {
      return store -> new LeaseStore() {
        @Override
        public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
          return store.claim(request, ownerToken, lease, retention);
        }

        @Override
        public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
          if (key.value().startsWith("crash-") && DOOMED_OWNER.computeIfAbsent(key.value(), k -> ownerToken).equals(ownerToken)) {
            throw new IdemStoreException("injected: the process died before the completion was written", null);
          }
          return store.complete(scope, key, ownerToken, response, retention);
        }

        @Override
        public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
          return store.release(scope, key, ownerToken);
        }

        @Override
        public long purgeExpired(int batchSize) {
          return store.purgeExpired(batchSize);
        }
      };
    }
  }

  @LocalServerPort int port;
  @Autowired JdbcTemplate jdbc;
  Api api;

  @BeforeEach
  void emptyTables() {
    api = Api.at(port);
    jdbc.update("DELETE FROM notes");
    jdbc.update("DELETE FROM idem_keys");
  }

  private long notes(String title) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE title = ?", Long.class, title);
  }

  @Test
  void aCompletionThatNeverHappensIsOutcomeUnknownAndTheRecoveryAnswersWithTheSameNote() throws Exception {
    String key = "crash-" + UUID.randomUUID();
    HttpResponse<String> first = api.postTitle(key, "Written before the crash");
    assertThat(first.statusCode()).as(first.body()).isEqualTo(503);
    assertThat(first.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    assertThat(JSON.readTree(first.body()).get("type").asText()).isEqualTo("urn:idem:problem:outcome-unknown");
    assertThat(first.headers().firstValue("Retry-After")).isPresent();
    assertThat(notes("Written before the crash")).as("the effect happened").isEqualTo(1);
    long id = jdbc.queryForObject("SELECT id FROM notes WHERE title = ?", Long.class, "Written before the crash");

    // A client retries with the same key: refused while the claim's lease runs (409), then the
    // retry takes the claim over as a recovery.
    HttpResponse<String> recovered = api.postTitle(key, "Written before the crash");
    for (int i = 0; recovered.statusCode() == 409 && i < 20; i++) {
      Thread.sleep(LEASE.toMillis() / 4);
      recovered = api.postTitle(key, "Written before the crash");
    }
    assertThat(recovered.statusCode()).as(recovered.body()).isEqualTo(201);
    assertThat(recovered.headers().firstValue("Idempotent-Replayed")).as("a recovery, not a replay").isEmpty();
    JsonNode note = JSON.readTree(recovered.body());
    assertThat(note.get("id").asLong()).as("the note of the first run").isEqualTo(id);
    assertThat(recovered.headers().firstValue("Location")).contains("/notes/" + id);
    assertThat(notes("Written before the crash")).as("one row").isEqualTo(1);

    HttpResponse<String> replay = api.postTitle(key, "Written before the crash");
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(replay.body()).isEqualTo(recovered.body());
  }
}
