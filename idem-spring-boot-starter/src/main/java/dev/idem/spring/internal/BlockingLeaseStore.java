package dev.idem.spring.internal;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A non-blocking store seen as a blocking {@link LeaseStore}, for Idem's own background threads
 * only (the scheduled purge's {@code idem-purge} thread), never for a request and never on an event
 * loop: each call waits for the stage, at most {@link #WAIT}. Thread-safe as the store is.
 */
public final class BlockingLeaseStore implements LeaseStore {

  /** The longest wait for one call: a purge of many batches may take minutes. */
  static final Duration WAIT = Duration.ofMinutes(10);

  private final AsyncLeaseStore store;

  /** @param store the non-blocking store, never {@code null} */
  public BlockingLeaseStore(AsyncLeaseStore store) {
    this.store = Objects.requireNonNull(store, "store");
  }

  /** @return the non-blocking store */
  public AsyncLeaseStore delegate() {
    return store;
  }

  @Override
  public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    return await(store.claimAsync(request, ownerToken, lease, retention));
  }

  @Override
  public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    return await(store.completeAsync(scope, key, ownerToken, response, retention));
  }

  @Override
  public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
    return await(store.releaseAsync(scope, key, ownerToken));
  }

  @Override
  public long purgeExpired(int batchSize) {
    return await(store.purgeExpiredAsync(batchSize));
  }

  private static <T> T await(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IdemStoreException("interrupted while waiting for the store", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw cause instanceof RuntimeException r ? r : new IdemStoreException("the store failed: " + cause, cause);
    } catch (TimeoutException e) {
      throw new IdemStoreException("the store did not answer within " + WAIT, e);
    }
  }

  @Override
  public String toString() {
    return store.toString();
  }
}
