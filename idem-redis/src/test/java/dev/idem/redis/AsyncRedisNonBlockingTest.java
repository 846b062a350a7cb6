package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.AttemptResult;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.blockhound.BlockingOperationError;

/**
 * The non-blocking store never blocks its caller's thread: every chain below is built on a thread
 * that BlockHound watches ({@link NonBlockingTestThreads}) and continues on Lettuce's I/O event
 * loop where each stage completes, which BlockHound watches too (Netty's integration marks event
 * loops as non-blocking threads); BlockHound is installed for the whole test run by its JUnit
 * Platform integration and turns any blocking call there into an error. The first two tests show
 * that the watch is on.
 */
class AsyncRedisNonBlockingTest {

  @RegisterExtension static final RedisTestServer REDIS = new RedisTestServer();

  private static final Duration LEASE = Duration.ofMinutes(1);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  /** A stage that completes on Lettuce's I/O event loop (BLPOP answers after a second): a sleep chained on it is an error. */
  @Test
  void blockingOnLettucesEventLoopIsAnError() {
    AtomicReference<String> thread = new AtomicReference<>();
    byte[] empty = (REDIS.prefix() + "empty-" + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8);
    CompletableFuture<Object> slept = REDIS.lettuce().async().blpop(1, empty).thenApply(nothing -> {
      thread.set(Thread.currentThread().getName());
      sleep();
      return (Object) "slept";
    }).toCompletableFuture();
    assertThatThrownBy(() -> slept.get(10, TimeUnit.SECONDS)).cause().isInstanceOf(BlockingOperationError.class);
    assertThat(thread.get()).as("the stage completed on Lettuce's event loop").contains("lettuce");
  }

  /** The thread the chains below start on is watched as well. */
  @Test
  void blockingOnTheTestsNonBlockingThreadIsAnError() {
    CompletableFuture<Object> slept = onNonBlockingThread(() -> {
      sleep();
      return CompletableFuture.completedFuture((Object) "slept");
    });
    assertThatThrownBy(() -> slept.get(10, TimeUnit.SECONDS)).cause().isInstanceOf(BlockingOperationError.class);
  }

  private static void sleep() {
    try {
      Thread.sleep(1);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Regression: the watched thread was a pooled one, whose wait for its next task BlockHound
   * refused; the refused wait broke the pool's lock and the worker and each replacement died with
   * an {@code IllegalMonitorStateException}, printed in a loop until CI ran out of time. Two tasks
   * a pause apart must leave no thread's death behind and no watched thread alive.
   */
  @Test
  void aWatchedPooledThreadWaitingForItsNextTaskDiedInALoop() throws Exception {
    List<Throwable> deaths = new CopyOnWriteArrayList<>();
    Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((thread, error) -> {
      if (NonBlockingTestThreads.NAME.equals(thread.getName())) {
        deaths.add(error);
      }
    });
    try {
      List<Thread> ran = new CopyOnWriteArrayList<>();
      for (int task = 0; task < 2; task++) {
        CompletableFuture.runAsync(() -> ran.add(Thread.currentThread()), NonBlockingTestThreads.executor())
            .get(10, TimeUnit.SECONDS);
        Thread.sleep(200);
      }
      for (Thread thread : ran) {
        thread.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(thread.isAlive()).as("a watched thread outlived its task").isFalse();
      }
      assertThat(deaths).as("watched threads that died of a refused wait").isEmpty();
    } finally {
      Thread.setDefaultUncaughtExceptionHandler(before);
    }
  }

  @Test
  void everyOperationStartedOnTheEventLoopRunsWithoutBlocking() throws Exception {
    runEveryOperation(store(LettuceStoreClient.of(REDIS.lettuce()), ResponseProtection.none(), RedisDurability.none()));
  }

  /** Response protection adds a read before the completion and a decryption: neither blocks. */
  @Test
  void protectedResponsesDoNotBlock() throws Exception {
    byte[] key = new byte[ResponseProtection.KEY_BYTES];
    Arrays.fill(key, (byte) 3);
    runEveryOperation(store(LettuceStoreClient.of(REDIS.lettuce()),
        ResponseProtection.builder().key("k", key).currentKey("k").build(), RedisDurability.none()));
  }

  /** A durable write takes a pooled connection without blocking (the server has no replica: each write is an unknown outcome). */
  @Test
  void durableWritesTakeTheirConnectionWithoutBlocking() throws Exception {
    AsyncRedisLeaseStore store = store(LettuceStoreClient.of(REDIS.lettuce(), REDIS.lettucePool(2)), ResponseProtection.none(),
        RedisDurability.replicas(1, Duration.ofMillis(50)));
    AsyncRedisLeaseStore plain = store(LettuceStoreClient.of(REDIS.lettuce()), ResponseProtection.none(), RedisDurability.none());
    IdempotentRequest request = request();
    CompletableFuture<Throwable> outcome = onNonBlockingThread(() -> plain.claimAsync(request, "owner-a", LEASE, RETENTION)
        .thenCompose(claimed -> store.claimAsync(request(), "owner-a", LEASE, RETENTION))
        .handle((result, failure) -> failure));
    Throwable failure = outcome.get(10, TimeUnit.SECONDS);
    assertThat(failure).isNotNull();
    assertThat(Stages.unwrap(failure)).isNotInstanceOf(BlockingOperationError.class)
        .hasMessageContaining("acknowledged by 0 of 1 replicas");
  }

  /** The engine's execution, replay and purge, each started from a stage that completed on the event loop. */
  @Test
  void theAsyncEngineRunsOnTheEventLoopWithoutBlocking() throws Exception {
    AsyncRedisLeaseStore store = store(LettuceStoreClient.of(REDIS.lettuce()), ResponseProtection.none(), RedisDurability.none());
    AsyncLeaseIdempotency idem = AsyncLeaseIdempotency.builder(store).build();
    IdempotentRequest request = request();
    List<AttemptResult> results = onNonBlockingThread(() -> store.purgeExpiredAsync(100)
        .thenCompose(purged -> idem.attempt(request, ctx -> CompletableFuture.completedFuture(StoredResponse.of(201, "once"))))
        .thenCompose(first -> idem.attempt(request, ctx -> CompletableFuture.completedFuture(StoredResponse.of(201, "twice")))
            .thenApply(second -> List.of(first, second))))
        .get(10, TimeUnit.SECONDS);
    assertThat(results.get(0).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(results.get(1).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(results.get(1).outcomeOrThrow().response().bodyAsString()).isEqualTo("once");
  }

  /** claim, complete, replay, status, release of another claim and a purge: each chained on the previous stage. */
  private static void runEveryOperation(AsyncRedisLeaseStore store) throws Exception {
    IdempotentRequest request = request();
    IdempotentRequest other = request();
    Scope scope = request.scope();
    CompletableFuture<ClaimResult> chain = onNonBlockingThread(() -> store.claimAsync(request, "owner-a", LEASE, RETENTION)
        .thenCompose(claimed -> store.completeAsync(scope, request.key(), "owner-a", StoredResponse.of(201, "done"), RETENTION))
        .thenCompose(completed -> store.completeAsync(scope, request.key(), "owner-a", StoredResponse.of(201, "done"), RETENTION))
        .thenCompose(again -> store.statusAsync(scope, request.key()))
        .thenCompose(status -> store.claimAsync(other, "owner-b", LEASE, RETENTION))
        .thenCompose(claimed -> store.releaseAsync(other.scope(), other.key(), "owner-b"))
        .thenCompose(released -> store.purgeExpiredAsync(100))
        .thenCompose(purged -> store.claimAsync(request, "owner-c", LEASE, RETENTION)));
    ClaimResult replay = chain.get(10, TimeUnit.SECONDS);
    assertThat(replay.state()).isEqualTo(ClaimResult.State.COMPLETED);
    assertThat(replay.response().bodyAsString()).isEqualTo("done");
  }

  /**
   * Runs {@code step} on the test's non-blocking thread ({@link NonBlockingTestThreads}), so that
   * the whole chain it builds runs there or on Lettuce's I/O event loop, whichever completes each
   * stage, both watched by BlockHound: never on the test's own thread, even when a stage is
   * complete before the next step is chained on it.
   */
  private static <T> CompletableFuture<T> onNonBlockingThread(Supplier<CompletionStage<T>> step) {
    return CompletableFuture.supplyAsync(step, NonBlockingTestThreads.executor()).thenCompose(stage -> stage);
  }

  private static AsyncRedisLeaseStore store(AsyncRedisStoreClient client, ResponseProtection protection, RedisDurability durability) {
    return AsyncRedisLeaseStore.builder(client).keyPrefix(REDIS.prefix()).responseProtection(protection).durability(durability).build();
  }

  private static IdempotentRequest request() {
    return new IdempotentRequest(Scope.of("alice", "POST /payments"), IdempotencyKey.of(UUID.randomUUID().toString()),
        Fingerprint.ofJson("{\"amount\":1}".getBytes(StandardCharsets.UTF_8)));
  }
}
