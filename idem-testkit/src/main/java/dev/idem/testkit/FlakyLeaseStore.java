package dev.idem.testkit;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A {@link LeaseStore} that forwards to another one and makes chosen completions fail with {@link
 * IdemStoreException}, as a dropped connection or a database restart would: either before the
 * write reaches the store, or after it was written with its acknowledgement lost. For tests of what
 * a caller does when a completion fails. Thread-safe when the delegate is.
 */
public final class FlakyLeaseStore implements LeaseStore {

  /** Where a failing completion fails. */
  public enum Failure {
    /** Nothing was written: the store never saw the completion. */
    BEFORE_WRITE,
    /** The completion was written, and the answer was lost on the way back. */
    AFTER_WRITE
  }

  private final LeaseStore delegate;
  private final Failure failure;
  private final int failures;
  private final Predicate<IdempotencyKey> keys;
  private final AtomicInteger completes = new AtomicInteger();
  private final List<String> owners = new CopyOnWriteArrayList<>();

  private FlakyLeaseStore(LeaseStore delegate, Failure failure, int failures, Predicate<IdempotencyKey> keys) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.failure = Objects.requireNonNull(failure, "failure");
    this.failures = failures;
    this.keys = Objects.requireNonNull(keys, "keys");
  }

  /**
   * @param delegate the real store, never {@code null}
   * @param count how many completions fail first (counted over every key), at least 0; {@link
   *     Integer#MAX_VALUE} for all of them
   * @param failure where they fail, never {@code null}
   * @return the store
   */
  public static FlakyLeaseStore failingCompletes(LeaseStore delegate, int count, Failure failure) {
    return failingCompletes(delegate, count, failure, key -> true);
  }

  /**
   * As {@link #failingCompletes(LeaseStore, int, Failure)}, only for the keys {@code keys} accepts
   * (the completions of other keys are forwarded and not counted).
   */
  public static FlakyLeaseStore failingCompletes(LeaseStore delegate, int count, Failure failure, Predicate<IdempotencyKey> keys) {
    if (count < 0) {
      throw new IllegalArgumentException("count must not be negative, was " + count);
    }
    return new FlakyLeaseStore(delegate, failure, count, keys);
  }

  /** @return how many completions of the chosen keys were called, failed ones included */
  public int completeCalls() {
    return completes.get();
  }

  /** @return the owner token of every completion call of the chosen keys, in order */
  public List<String> completeOwners() {
    return List.copyOf(owners);
  }

  @Override
  public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    return delegate.claim(request, ownerToken, lease, retention);
  }

  @Override
  public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    if (!keys.test(key)) {
      return delegate.complete(scope, key, ownerToken, response, retention);
    }
    owners.add(ownerToken);
    if (completes.incrementAndGet() > failures) {
      return delegate.complete(scope, key, ownerToken, response, retention);
    }
    if (failure == Failure.AFTER_WRITE) {
      delegate.complete(scope, key, ownerToken, response, retention);
      throw new IdemStoreException("injected: the connection dropped after the completion of key '" + key + "' was written", null);
    }
    throw new IdemStoreException("injected: the connection dropped before the completion of key '" + key + "' was written", null);
  }

  @Override
  public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
    return delegate.release(scope, key, ownerToken);
  }

  @Override
  public long purgeExpired(int batchSize) {
    return delegate.purgeExpired(batchSize);
  }
}
