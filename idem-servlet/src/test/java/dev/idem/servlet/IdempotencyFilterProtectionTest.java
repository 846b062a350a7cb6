package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Responses protected at rest: replayed exactly while the keyring can read them, and answered with
 * a 500 problem (never a replay, never a second run) when it cannot.
 */
class IdempotencyFilterProtectionTest {

  private static final ResponseProtection KEY_A =
      ResponseProtection.builder().key("a", new byte[ResponseProtection.KEY_BYTES]).currentKey("a").build();

  private TestServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private HttpResponse<byte[]> post(String key) throws Exception {
    return server.send(server.request("/notes").header("Idempotency-Key", key)
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{\"title\":\"t\"}")).build());
  }

  @Test
  void aStoredResponseThatFailsAuthenticationAnswers500UnreadableNeverReplayedNorRunAgain() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore(Clock.systemUTC(), KEY_A);
    AtomicReference<Scope> scope = new AtomicReference<>();
    LeaseStore watched = new LeaseStore() {
      @Override
      public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
        scope.set(request.scope());
        return store.claim(request, ownerToken, lease, retention);
      }

      @Override
      public boolean complete(Scope s, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
        return store.complete(s, key, ownerToken, response, retention);
      }

      @Override
      public boolean release(Scope s, IdempotencyKey key, String ownerToken) {
        return store.release(s, key, ownerToken);
      }

      @Override
      public long purgeExpired(int batchSize) {
        return store.purgeExpired(batchSize);
      }
    };
    TestApp app = new TestApp();
    server = new TestServer(IdempotencyFilterConfig.builder(watched).build(), app);

    HttpResponse<byte[]> first = post("k-protected");
    assertThat(first.statusCode()).isEqualTo(201);
    HttpResponse<byte[]> replay = post("k-protected");
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(replay.body()).isEqualTo(first.body());

    HttpResponse<byte[]> other = post("k-other");
    assertThat(other.statusCode()).isEqualTo(201);
    // someone with write access to the store moves one record's ciphertext into another record
    byte[] moved = store.storedResponseBytes(scope.get(), IdempotencyKey.of("k-protected"));
    assertThat(new String(moved, StandardCharsets.ISO_8859_1)).doesNotContain(new String(first.body(), StandardCharsets.ISO_8859_1));
    assertThat(store.replaceStoredResponseBytes(scope.get(), IdempotencyKey.of("k-other"), moved)).isTrue();

    HttpResponse<byte[]> refused = post("k-other");
    IdempotencyFilterTest.assertProblem(refused, 500, IdempotencyFilter.PROBLEM_STORED_RESPONSE_UNREADABLE);
    assertThat(refused.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(refused.headers().firstValue("Location")).isEmpty();
    assertThat(new String(refused.body(), StandardCharsets.UTF_8)).contains("not run again").doesNotContain("k-other");
    assertThat(app.calls("POST /notes")).isEqualTo(2);
  }
}
