package dev.idem.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.WebFilter;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A client that closes its socket mid-request, at each point where WebFlux cancels the filter's
 * chain, then the retry that follows: exactly one effect per key (handler completions counted), no
 * key left claimed, no stored success for a handler that did not finish. The requests go over a
 * raw socket so that the test decides when the connection closes; Reactor Netty then cancels the
 * chain (or fails the body being read), which a watching filter around the idempotency filter sees
 * before the test goes on.
 */
class IdempotencyWebFilterCancelTest {

  private final GatedStore store = new GatedStore();
  private final AtomicInteger started = new AtomicInteger();
  private final AtomicInteger completed = new AtomicInteger();
  private final CompletableFuture<Void> handlerGate = new CompletableFuture<>();
  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch ended = new CountDownLatch(1);
  private TestServer server;

  @AfterEach
  void stop() {
    handlerGate.complete(null);
    store.claimGate.complete(null);
    store.completeGate.complete(null);
    if (server != null) {
      server.close();
    }
  }

  private TestServer start(int maxResponseBytes) {
    IdempotencyWebFilter filter = new IdempotencyWebFilter(IdempotencyWebFilterConfig.builder(
            AsyncLeaseIdempotency.builder(store).lease(Duration.ofSeconds(30)).build())
        .requireKey("POST", "/**")
        .maxResponseBytes(maxResponseBytes)
        .build());
    WebFilter watched = (exchange, chain) -> {
      entered.countDown();
      return filter.filter(exchange, chain).doFinally(signal -> ended.countDown());
    };
    server = new TestServer(watched, RouterFunctions.route()
        .POST("/charges", req -> req.bodyToMono(String.class).flatMap(body -> {
          started.incrementAndGet();
          return Mono.fromCompletionStage(handlerGate)
              .then(Mono.defer(() -> ServerResponse.status(201).bodyValue("charge " + completed.incrementAndGet())));
        }))
        .POST("/report", req -> {
          started.incrementAndGet();
          // a body that passes the response limit at once, so it streams; its end comes after the gate
          Flux<DataBuffer> body = Flux.concat(
              Mono.fromSupplier(() -> buffer("x".repeat(3000))),
              Mono.fromCompletionStage(handlerGate).then(Mono.fromSupplier(() -> {
                completed.incrementAndGet();
                return buffer("y".repeat(3000));
              })));
          return ServerResponse.status(201).body(BodyInserters.fromDataBuffers(body));
        })
        .build());
    return server;
  }

  private TestServer start() {
    return start(64 * 1024);
  }

  private static DataBuffer buffer(String text) {
    return DefaultDataBufferFactory.sharedInstance.wrap(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Sends the request line, header fields and {@code sentBody} of a body of {@code length} bytes. */
  private Socket open(String path, String key, int length, String sentBody) throws Exception {
    Socket socket = new Socket("127.0.0.1", server.uri("/").getPort());
    OutputStream out = socket.getOutputStream();
    out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nIdempotency-Key: " + key
        + "\r\nContent-Length: " + length + "\r\n\r\n" + sentBody).getBytes(StandardCharsets.US_ASCII));
    out.flush();
    return socket;
  }

  /**
   * Closes with a reset, as a client that gives up does, and waits until WebFlux has ended the
   * filter's chain: cancelled, or failed with the reset while the body was being read.
   */
  private void hangUp(Socket socket) throws Exception {
    socket.setSoLinger(true, 0);
    socket.close();
    assertThat(ended.await(10, TimeUnit.SECONDS)).as("WebFlux ended the filter's chain").isTrue();
  }

  private HttpResponse<String> retry(String path, String key) throws Exception {
    return server.send(server.post(path, "{\"amount\":10}", key));
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as(what).isLessThan(end);
      Thread.sleep(10);
    }
  }

  private static String key() {
    return UUID.randomUUID().toString();
  }

  @Test
  void aClientThatLeavesWhileTheBodyIsReadClaimsNothingAndTheRetryRunsOnce() throws Exception {
    start();
    handlerGate.complete(null);
    String key = key();
    Socket socket = open("/charges", key, 13, "{\"amou");
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    hangUp(socket);

    assertThat(store.claims).as("the key was never claimed").hasValue(0);
    HttpResponse<String> retry = retry("/charges", key);
    HttpResponse<String> again = retry("/charges", key);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo("charge 1");
    assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(completed).as("one effect").hasValue(1);
    assertThat(server.errors()).as("the reset while reading the body, as without the filter").hasSize(1);
  }

  @Test
  void aClientThatLeavesWhileTheClaimIsInFlightRunsNoHandlerAndTheKeyIsReleased() throws Exception {
    start();
    handlerGate.complete(null);
    store.claimGate = new CompletableFuture<>();
    String key = key();
    Socket socket = open("/charges", key, 13, "{\"amount\":10}");
    await("the claim reached the store", () -> store.claims.get() == 1);
    hangUp(socket);
    store.claimGate.complete(null); // the claim succeeds after the client left

    await("the key is released", () -> store.releases.get() == 1);
    assertThat(started).as("the handler never began").hasValue(0);
    HttpResponse<String> retry = retry("/charges", key);
    HttpResponse<String> again = retry("/charges", key);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(again.statusCode()).isEqualTo(201);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(completed).as("one effect, the retry's").hasValue(1);
    assertThat(server.errors()).isEmpty();
  }

  @Test
  void aHandlerRunningWhenTheClientLeavesFinishesDetachedAndTheRetryGetsItsAnswer() throws Exception {
    start();
    String key = key();
    Socket socket = open("/charges", key, 13, "{\"amount\":10}");
    await("the handler began", () -> started.get() == 1);
    hangUp(socket);
    handlerGate.complete(null); // the handler finishes after its client left

    await("the answer is stored", () -> store.completions.get() == 1);
    HttpResponse<String> retry = retry("/charges", key);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo("charge 1");
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(started).hasValue(1);
    assertThat(completed).as("one effect").hasValue(1);
    assertThat(store.releases).hasValue(0);
    assertThat(server.errors()).isEmpty();
  }

  @Test
  void aStreamingAnswerCutOffByTheClientIsStillTheHandlersOneEffect() throws Exception {
    start(1024);
    String key = key();
    Socket socket = open("/report", key, 13, "{\"amount\":10}");
    await("the handler began", () -> started.get() == 1);
    // the first 3000 bytes stream to the client (past the 1024-byte limit); the rest waits for the gate
    socket.getInputStream().readNBytes(100);
    hangUp(socket);
    handlerGate.complete(null);

    await("the answer is settled", () -> store.completions.get() + store.releases.get() == 1);
    assertThat(store.releases).as("not released: the handler's effect ran").hasValue(0);
    HttpResponse<String> retry = retry("/report", key);
    assertThat(retry.statusCode()).as("stored without its body, as any answer past the limit").isEqualTo(422);
    assertThat(retry.body()).contains(IdempotencyWebFilter.PROBLEM_RESPONSE_TOO_LARGE);
    assertThat(started).as("the retry did not run the handler again").hasValue(1);
    assertThat(completed).hasValue(1);
  }

  @Test
  void aClientThatLeavesAfterTheAnswerIsStoredGetsTheReplayOnItsRetry() throws Exception {
    start();
    handlerGate.complete(null);
    store.completeGate = new CompletableFuture<>();
    String key = key();
    Socket socket = open("/charges", key, 13, "{\"amount\":10}");
    await("the answer is stored", () -> store.completions.get() == 1);
    hangUp(socket); // before the store's answer reaches the filter, so before anything is written

    HttpResponse<String> retry = retry("/charges", key);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo("charge 1");
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    store.completeGate.complete(null);
    assertThat(completed).as("one effect").hasValue(1);
    assertThat(server.errors()).isEmpty();
  }

  /**
   * The in-memory store, with gates the test opens: a claim that waits before reaching the store,
   * a completion that is stored at once but answered only when its gate opens.
   */
  private static final class GatedStore implements AsyncLeaseStore {
    private final InMemoryLeaseStore delegate = new InMemoryLeaseStore();
    final AtomicInteger claims = new AtomicInteger();
    final AtomicInteger completions = new AtomicInteger();
    final AtomicInteger releases = new AtomicInteger();
    volatile CompletableFuture<Void> claimGate = CompletableFuture.completedFuture(null);
    volatile CompletableFuture<Void> completeGate = CompletableFuture.completedFuture(null);

    @Override
    public CompletionStage<ClaimResult> claimAsync(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
      claims.incrementAndGet();
      return claimGate.thenCompose(v -> delegate.claimAsync(request, ownerToken, lease, retention));
    }

    @Override
    public CompletionStage<Boolean> completeAsync(
        Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
      return delegate.completeAsync(scope, key, ownerToken, response, retention).thenCompose(stored -> {
        completions.incrementAndGet();
        return completeGate.thenApply(v -> stored);
      });
    }

    @Override
    public CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String ownerToken) {
      return delegate.releaseAsync(scope, key, ownerToken).whenComplete((released, error) -> releases.incrementAndGet());
    }

    @Override
    public CompletionStage<Long> purgeExpiredAsync(int batchSize) {
      return delegate.purgeExpiredAsync(batchSize);
    }
  }
}
