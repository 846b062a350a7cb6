package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A store that fails after the handler ran: the completion is retried within the lease, and when it
 * never succeeds the client is told the outcome is unknown instead of getting an answer that is not
 * stored.
 */
class IdempotencyFilterStoreFailureTest {

  InMemoryLeaseStore memory;
  volatile int failCompletes;
  TestApp app;
  TestServer server;

  @BeforeEach
  void start() throws Exception {
    memory = new InMemoryLeaseStore();
    LeaseStore flaky = new LeaseStore() {
      @Override
      public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
        return memory.claim(request, ownerToken, lease, retention);
      }

      @Override
      public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
        if (failCompletes > 0) {
          failCompletes--;
          throw new IdemStoreException("connection lost while completing", null);
        }
        return memory.complete(scope, key, ownerToken, response, retention);
      }

      @Override
      public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
        return memory.release(scope, key, ownerToken);
      }

      @Override
      public long purgeExpired(int batchSize) {
        return memory.purgeExpired(batchSize);
      }
    };
    app = new TestApp();
    LeaseIdempotency engine = LeaseIdempotency.builder(flaky).lease(LEASE).build();
    server = new TestServer(IdempotencyFilterConfig.builder(engine).build(), app);
  }

  private static final Duration LEASE = Duration.ofMillis(600);

  @AfterEach
  void stop() {
    server.close();
  }

  private HttpResponse<byte[]> post(String key) throws Exception {
    return server.send(server.request("/notes").header("Idempotency-Key", key)
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}")).build());
  }

  @Test
  void aCompletionThatFailsTwiceIsRetriedAndTheAnswerSentIsTheOneReplayed() throws Exception {
    failCompletes = 2;
    HttpResponse<byte[]> first = post("flaky-complete");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    HttpResponse<byte[]> retry = post("flaky-complete");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(app.calls("POST /notes")).isEqualTo(1);
  }

  @Test
  void storeFailureOnEveryCompletionAnswers503OutcomeUnknownNotAnUnstored201() throws Exception {
    failCompletes = Integer.MAX_VALUE;
    HttpResponse<byte[]> first = post("late-failure");
    IdempotencyFilterTest.assertProblem(first, 503, IdempotencyFilter.PROBLEM_OUTCOME_UNKNOWN);
    assertThat(first.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(first.headers().firstValue("Location")).as("nothing of the unstored answer leaks").isEmpty();
    assertThat(new String(first.body(), StandardCharsets.UTF_8)).contains("same Idempotency-Key");
    assertThat(app.calls("POST /notes")).isEqualTo(1);

    // The claim stays held until its lease ends, so a retry does not run the effect again now.
    failCompletes = 0;
    IdempotencyFilterTest.assertProblem(post("late-failure"), 409, IdempotencyFilter.PROBLEM_IN_PROGRESS);
    assertThat(app.calls("POST /notes")).isEqualTo(1);

    // After the lease the retry takes the claim over, and the handler is told it is a recovery.
    Thread.sleep(LEASE.toMillis() + 200);
    HttpResponse<byte[]> recovered = post("late-failure");
    assertThat(recovered.statusCode()).isEqualTo(201);
    assertThat(app.calls("POST /notes")).isEqualTo(2);
    assertThat(app.lastLeaseContext().recovery()).isTrue();
    assertThat(post("late-failure").headers().firstValue("Idempotent-Replayed")).hasValue("true");
  }
}
