package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AttemptResult;
import dev.idem.core.EffectContext;
import dev.idem.core.IdemStoreException;
import java.time.Duration;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.IdempotencyEngine;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A transactional engine whose transaction fails after the handler answered: the handler's answer
 * is never sent, and the problem says what a retry can do.
 */
class IdempotencyFilterTransactionFailureTest {

  TestServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private HttpResponse<byte[]> postWith(AttemptResult afterTheHandler) throws Exception {
    IdempotencyEngine engine = (request, handler) -> {
      try (Connection connection = DriverManager.getConnection("jdbc:sqlite::memory:")) {
        handler.run(EffectContext.ofTransaction(connection)); // the handler answers 201 ...
      } catch (Exception e) {
        throw new AssertionError(e);
      }
      return afterTheHandler; // ... and its transaction fails afterwards
    };
    server = new TestServer(IdempotencyFilterConfig.builder(engine).build(), new TestApp());
    return server.send(server.request("/notes").header("Idempotency-Key", "k-tx")
        .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}")).build());
  }

  /**
   * Regression: when the COMMIT's acknowledgement was lost, the 503 said the request was not
   * processed although it may have been committed. It must say the outcome is unknown and that a
   * retry with the same key is safe.
   */
  @Test
  void aLostCommitAcknowledgementIsA503ThatSaysTheOutcomeIsUnknownAndARetryIsSafe() throws Exception {
    HttpResponse<byte[]> r = postWith(AttemptResult.outcomeUnknown(new OutcomeUnknownException(IdempotencyKey.of("k-1"),
        Duration.ofSeconds(1), OutcomeUnknownException.Phase.COMMIT, new SQLException("An I/O error occurred while sending to the backend", "08006"))));
    IdempotencyFilterTest.assertProblem(r, 503, IdempotencyFilter.PROBLEM_OUTCOME_UNKNOWN);
    String body = new String(r.body(), StandardCharsets.UTF_8);
    assertThat(body).contains("outcome of the request is unknown").contains("retry with the same Idempotency-Key is safe")
        .doesNotContain("not processed");
  }

  @Test
  void aRollbackThatARetryCanGetPastIsA503() throws Exception {
    HttpResponse<byte[]> r = postWith(AttemptResult.rolledBack(new IdemStoreException("deadlock", new SQLException("deadlock", "40P01")), true));
    IdempotencyFilterTest.assertProblem(r, 503, IdempotencyFilter.PROBLEM_STORE_UNAVAILABLE);
  }

  /**
   * The request's own failure (its data refused at the commit, a success answered after an error
   * that aborted its transaction) is a 500 problem, never "retry later", and not the handler's 201.
   */
  @Test
  void theRequestsOwnFailureIsA500ProblemNotRetryLater() throws Exception {
    HttpResponse<byte[]> r = postWith(AttemptResult.rolledBack(new IdemStoreException("refused at commit",
        new SQLException("violates foreign key constraint", "23503")), false));
    IdempotencyFilterTest.assertProblem(r, 500, IdempotencyFilter.PROBLEM_REQUEST_FAILED);
    assertThat(new String(r.body(), StandardCharsets.UTF_8)).doesNotContain("retry later");
  }
}
