package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A store that fails after the handler ran: the handler's answer is still sent, and never twice. */
class IdempotencyFilterStoreFailureTest {

  InMemoryLeaseStore memory;
  volatile boolean failComplete;
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
        if (failComplete) {
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
    server = new TestServer(IdempotencyFilterConfig.builder(flaky).build(), app);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  @Test
  void storeFailureAfterTheHandlerRanStillSendsItsAnswerAndKeepsTheClaim() throws Exception {
    failComplete = true;
    HttpResponse<byte[]> first = server.send(server.request("/notes").header("Idempotency-Key", "late-failure")
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}")).build());
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Location")).hasValue("/notes/1");
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();

    // The claim stays held until its lease ends, so a retry does not run the effect again now.
    failComplete = false;
    HttpResponse<byte[]> retry = server.send(server.request("/notes").header("Idempotency-Key", "late-failure")
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}")).build());
    IdempotencyFilterTest.assertProblem(retry, 409, IdempotencyFilter.PROBLEM_IN_PROGRESS);
    assertThat(app.calls("POST /notes")).isEqualTo(1);
    assertThat(memory.size()).isEqualTo(1);
  }
}
