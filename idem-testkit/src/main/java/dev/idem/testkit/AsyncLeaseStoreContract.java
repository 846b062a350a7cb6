package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.AttemptResult;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The lease-mode store contract for an {@link AsyncLeaseStore}: every test of {@link
 * LeaseStoreContract}, run on the async store through a view that waits for each stage (so the
 * rules are checked once, in one place, for both SPIs), plus the non-blocking engine ({@link
 * AsyncLeaseIdempotency}) on the store itself. A store runs it by subclassing and returning its
 * store from {@link #asyncStore()}:
 *
 * <pre>{@code
 * class MyAsyncLeaseContractTest extends AsyncLeaseStoreContract {
 *   private final MyAsyncStore store = new MyAsyncStore(...);
 *   @Override protected AsyncLeaseStore asyncStore() { return store; }
 * }
 * }</pre>
 *
 * <p>The view unwraps a stage's failure and throws it as the blocking method would: an {@link
 * dev.idem.core.IdemStoreException} stays one, so the contract's failure tests see what they
 * expect.
 */
public abstract class AsyncLeaseStoreContract extends LeaseStoreContract {

  private @Nullable LeaseStore blocking;

  /** @return the async store under test; the same instance for the whole test */
  protected abstract AsyncLeaseStore asyncStore();

  /** @return {@link #asyncStore()} seen as a {@link LeaseStore} that waits for each stage */
  @Override
  protected final LeaseStore store() {
    LeaseStore view = blocking;
    if (view == null) {
      view = new Waiting(asyncStore());
      blocking = view;
    }
    return view;
  }

  @Test
  void theAsyncEngineExecutesOnceAndReplaysOnTheStore() throws Exception {
    AsyncLeaseIdempotency idem = AsyncLeaseIdempotency.builder(asyncStore()).build();
    IdempotentRequest request = asyncRequest("k-async", "{\"amount\":10}");
    AttemptResult first = idem.attempt(request, ctx -> asyncEffect(201, "charged")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    AttemptResult second = idem.attempt(request, ctx -> asyncEffect(201, "charged again")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(second.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(second.outcomeOrThrow().response().bodyAsString()).isEqualTo("charged");
    assertThat(effects).hasValue(1);
  }

  /** 16 duplicates started at once through the async engine, which waits for the owner: one effect, 15 replays. */
  @Test
  void concurrentDuplicatesThroughTheAsyncEngineProduceOneEffect() throws Exception {
    AsyncLeaseIdempotency idem = AsyncLeaseIdempotency.builder(asyncStore())
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(30))).build();
    IdempotentRequest request = asyncRequest("k-async-race", "{\"v\":1}");
    CompletableFuture<StoredResponse> gate = new CompletableFuture<>();
    List<CompletableFuture<AttemptResult>> all = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      all.add(idem.attempt(request, ctx -> {
        effects.incrementAndGet();
        return gate; // the owner holds its claim until every duplicate has asked
      }).toCompletableFuture());
    }
    gate.complete(StoredResponse.of(201, "the one"));
    List<AttemptResult> results = new ArrayList<>();
    for (CompletableFuture<AttemptResult> f : all) {
      results.add(f.get(60, TimeUnit.SECONDS));
    }
    assertThat(effects).hasValue(1);
    assertThat(results).filteredOn(r -> r.kind() == AttemptResult.Kind.EXECUTED).hasSize(1);
    assertThat(results).filteredOn(r -> r.kind() == AttemptResult.Kind.REPLAYED).hasSize(15);
  }

  private IdempotentRequest asyncRequest(String key, String json) {
    return IdempotentRequest.ofJson(principal, "POST /async", key, json.getBytes(StandardCharsets.UTF_8));
  }

  private CompletionStage<StoredResponse> asyncEffect(int status, String body) {
    effects.incrementAndGet();
    return CompletableFuture.completedFuture(StoredResponse.of(status, body));
  }

  /** Waits for each stage of an async store; a failed stage throws its cause as the blocking method would. */
  private static final class Waiting implements LeaseStore {
    private final AsyncLeaseStore async;

    Waiting(AsyncLeaseStore async) {
      this.async = async;
    }

    @Override
    public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
      return await(async.claimAsync(request, ownerToken, lease, retention));
    }

    @Override
    public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
      return await(async.completeAsync(scope, key, ownerToken, response, retention));
    }

    @Override
    public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
      return await(async.releaseAsync(scope, key, ownerToken));
    }

    @Override
    public long purgeExpired(int batchSize) {
      return await(async.purgeExpiredAsync(batchSize));
    }

    private static <T> T await(CompletionStage<T> stage) {
      try {
        return stage.toCompletableFuture().join();
      } catch (CompletionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException r) {
          throw r;
        }
        if (cause instanceof Error err) {
          throw err;
        }
        throw e;
      }
    }
  }
}
