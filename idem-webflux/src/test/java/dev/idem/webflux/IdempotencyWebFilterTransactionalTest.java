package dev.idem.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.StoredResponse;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The filter in transactional mode over real HTTP, on a scripted {@link TransactionalEngine}: the
 * handler runs as the engine's effect, then the engine answers what the test says (a commit lost,
 * a rollback), so each result kind's answer is seen by a real client.
 */
class IdempotencyWebFilterTransactionalTest {

  private final AtomicInteger runs = new AtomicInteger();
  private TestServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  /** An engine that runs the handler, then gives the result {@code after} makes of its answer. */
  private TestServer start(BiFunction<IdempotentRequest, StoredResponse, AttemptResult> after) {
    TransactionalEngine engine = new TransactionalEngine() {
      @Override
      public Mono<AttemptResult> attempt(IdempotentRequest request, Mono<StoredResponse> handler) {
        return handler.map(answer -> after.apply(request, answer));
      }

      @Override
      public IdemListener listener() {
        return IdemListener.NONE;
      }
    };
    IdempotencyWebFilterConfig config = IdempotencyWebFilterConfig.builder(engine).requireKey("POST", "/**")
        .maxResponseBytes(1000).build();
    server = new TestServer(config, routes());
    return server;
  }

  private RouterFunction<ServerResponse> routes() {
    return RouterFunctions.route()
        .POST("/small", req -> {
          runs.incrementAndGet();
          return ServerResponse.status(201).bodyValue("created");
        })
        .POST("/streamed", req -> {
          runs.incrementAndGet();
          // no Content-Length: the client sees the answer complete only with its last chunk
          return ServerResponse.status(201).contentType(MediaType.TEXT_PLAIN)
              .body(Flux.just("x".repeat(800), "y".repeat(800), "z".repeat(800)), String.class);
        })
        .build();
  }

  private static AttemptResult commitLost(IdempotentRequest request, StoredResponse answer) {
    return AttemptResult.outcomeUnknown(new OutcomeUnknownException(request.key(), Duration.ofSeconds(1),
        OutcomeUnknownException.Phase.COMMIT, new IllegalStateException("connection reset during COMMIT")));
  }

  private static AttemptResult rolledBack(IdempotentRequest request, StoredResponse answer) {
    return AttemptResult.rolledBack(new IdemStoreException("storing the response failed", null), true);
  }

  @Test
  void aStreamedAnswerWhoseCommitWasLostEndedCleanly() {
    TestServer s = start(IdempotencyWebFilterTransactionalTest::commitLost);
    // The answer over the limit streamed before the commit; the commit's outcome is unknown, so
    // the client must not get a clean, complete success (as the servlet filter, which aborts it)
    assertThatThrownBy(() -> s.send(s.post("/streamed", "{}", UUID.randomUUID().toString()))).isInstanceOf(IOException.class);
    assertThat(runs).hasValue(1);
  }

  @Test
  void aStreamedAnswerWhoseTransactionRolledBackFailedOnReadOnlyHeaders() {
    TestServer s = start(IdempotencyWebFilterTransactionalTest::rolledBack);
    assertThatThrownBy(() -> s.send(s.post("/streamed", "{}", UUID.randomUUID().toString()))).isInstanceOf(IOException.class);
    assertThat(s.errors()).singleElement().satisfies(e -> assertThat(e).hasMessageContaining("did not commit"));
  }

  /**
   * A transaction's Mono gives its result before its commit completes ({@code usingWhen}): the
   * filter must let it run to its end. Subscribing to the engine inside the request's context (for
   * its observation) through {@code Mono.from} cancelled it at its result, so the transaction rolled
   * back where it should have committed.
   */
  @Test
  void theEnginesMonoRunsOnToItsCommitAfterItsResult() throws Exception {
    CompletableFuture<String> end = new CompletableFuture<>();
    // Flux.usingWhen, as a transaction operator: the value first, then the commit, then completion
    TransactionalEngine engine = TransactionalEngine.of((request, handler) -> Mono.fromDirect(Flux.usingWhen(
        Mono.just("transaction"),
        transaction -> handler.map(answer -> AttemptResult.of(Outcome.executed(answer))),
        transaction -> Mono.delay(Duration.ofMillis(50)).doOnNext(x -> end.complete("committed")).then(),
        (transaction, error) -> Mono.fromRunnable(() -> end.complete("rolled back")),
        transaction -> Mono.fromRunnable(() -> end.complete("cancelled")))), IdemListener.NONE);
    server = new TestServer(IdempotencyWebFilterConfig.builder(engine).requireKey("POST", "/**").build(), routes());
    HttpResponse<String> r = server.send(server.post("/small", "{}", UUID.randomUUID().toString()));
    assertThat(r.statusCode()).isEqualTo(201);
    assertThat(end.get(10, TimeUnit.SECONDS)).isEqualTo("committed");
  }

  @Test
  void aLostCommitIsA503OfTheCommitWithRetryAfter() throws Exception {
    TestServer s = start(IdempotencyWebFilterTransactionalTest::commitLost);
    HttpResponse<String> r = s.send(s.post("/small", "{}", UUID.randomUUID().toString()));
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.body()).contains(IdempotencyWebFilter.PROBLEM_OUTCOME_UNKNOWN).contains("sent for commit");
    assertThat(r.headers().firstValue("Retry-After")).isPresent();
  }

  @Test
  void aRollbackIsA503AndARequestFailureA500() throws Exception {
    TestServer s = start(IdempotencyWebFilterTransactionalTest::rolledBack);
    assertThat(s.send(s.post("/small", "{}", UUID.randomUUID().toString())).statusCode()).isEqualTo(503);
    server.close();
    TestServer f = start((request, answer) -> AttemptResult.rolledBack(new IdemStoreException("refused", null), false));
    HttpResponse<String> r = f.send(f.post("/small", "{}", UUID.randomUUID().toString()));
    assertThat(r.statusCode()).isEqualTo(500);
  }
}
