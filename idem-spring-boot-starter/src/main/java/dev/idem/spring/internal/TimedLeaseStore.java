package dev.idem.spring.internal;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * A {@link LeaseStore} that times every call of another one as {@code idem.store.latency} (tags
 * {@code operation}: claim, complete, release, purge; {@code outcome}: success or error).
 * Thread-safe when the wrapped store is.
 */
public final class TimedLeaseStore implements LeaseStore {

  private final LeaseStore delegate;
  private final MeterRegistry registry;

  /**
   * @param delegate the store to time
   * @param registry where the timer is registered
   */
  /** @return the store this one times */
  public LeaseStore delegate() {
    return delegate;
  }

  public TimedLeaseStore(LeaseStore delegate, MeterRegistry registry) {
    this.delegate = delegate;
    this.registry = registry;
  }

  @Override
  public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    return time("claim", () -> delegate.claim(request, ownerToken, lease, retention));
  }

  @Override
  public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    return time("complete", () -> delegate.complete(scope, key, ownerToken, response, retention));
  }

  @Override
  public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
    return time("release", () -> delegate.release(scope, key, ownerToken));
  }

  @Override
  public long purgeExpired(int batchSize) {
    return time("purge", () -> delegate.purgeExpired(batchSize));
  }

  private <T> T time(String operation, Supplier<T> call) {
    long start = System.nanoTime();
    String outcome = "error";
    try {
      T result = call.get();
      outcome = "success";
      return result;
    } finally {
      Timer.builder("idem.store.latency")
          .description("Latency of the idempotency store")
          .tag("operation", operation)
          .tag("outcome", outcome)
          .register(registry)
          .record(Duration.ofNanos(System.nanoTime() - start));
    }
  }
}
