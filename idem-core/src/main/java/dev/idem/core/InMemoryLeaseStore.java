package dev.idem.core;

import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.time.Clock;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A {@link LeaseStore} in the memory of one JVM, for unit tests of code that uses Idem and for
 * single-process tools. Records are lost when the process ends, so it is no substitute for a real
 * store in production.
 *
 * <p>Its clock is the one given to {@link #InMemoryLeaseStore(Clock)} (by default the system UTC
 * clock), which plays the role of a database's clock; a test can pass a controllable clock to move
 * time past a lease or a retention. Thread-safe: each record is updated atomically.
 */
public final class InMemoryLeaseStore implements LeaseStore {

  private final Clock clock;
  private final Map<Id, Entry> records = new ConcurrentHashMap<>();

  /** A store on the system UTC clock. */
  public InMemoryLeaseStore() {
    this(Clock.systemUTC());
  }

  /** @param clock the store's clock, never {@code null} */
  public InMemoryLeaseStore(Clock clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** @return how many records are held, expired ones included until purged */
  public int size() {
    return records.size();
  }

  @Override
  public ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    Objects.requireNonNull(ownerToken, "ownerToken");
    AtomicReference<ClaimResult> result = new AtomicReference<>();
    records.compute(new Id(request.scope(), request.key()), (id, e) -> {
      long now = clock.millis();
      Entry fresh = new Entry(request.fingerprint(), ownerToken, now + lease.toMillis(), null, now + retention.toMillis());
      if (e == null || now >= e.expiresAt) {
        result.set(ClaimResult.claimed(request.fingerprint(), false));
        return fresh;
      }
      if (e.response != null) {
        result.set(ClaimResult.completed(e.fingerprint, e.response));
        return e;
      }
      if (e.owner.equals(ownerToken)) {
        result.set(ClaimResult.claimed(e.fingerprint, false));
        return new Entry(e.fingerprint, ownerToken, now + lease.toMillis(), null, e.expiresAt);
      }
      if (now >= e.leaseUntil && e.fingerprint.equals(request.fingerprint())) {
        result.set(ClaimResult.claimed(e.fingerprint, true));
        return new Entry(e.fingerprint, ownerToken, now + lease.toMillis(), null, Math.max(e.expiresAt, now + retention.toMillis()));
      }
      result.set(ClaimResult.inProgress(e.fingerprint, Duration.ofMillis(Math.max(0, e.leaseUntil - now))));
      return e;
    });
    return result.get();
  }

  @Override
  public boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    Objects.requireNonNull(response, "response");
    boolean[] done = {false};
    records.computeIfPresent(new Id(scope, key), (id, e) -> {
      long now = clock.millis();
      if (now >= e.expiresAt || !e.owner.equals(ownerToken)) {
        return e;
      }
      if (e.response != null) {
        done[0] = e.response.equals(response); // a repeated completion by this owner: already done
        return e;
      }
      done[0] = true;
      return new Entry(e.fingerprint, e.owner, e.leaseUntil, response, now + retention.toMillis());
    });
    return done[0];
  }

  @Override
  public boolean release(Scope scope, IdempotencyKey key, String ownerToken) {
    Objects.requireNonNull(ownerToken, "ownerToken");
    boolean[] done = {true}; // absent: nothing is held, as after an earlier release by this owner
    records.computeIfPresent(new Id(scope, key), (id, e) -> {
      if (clock.millis() >= e.expiresAt) {
        return e; // expired counts as absent; the purge removes it
      }
      if (e.response != null || !e.owner.equals(ownerToken)) {
        done[0] = false;
        return e;
      }
      return null;
    });
    return done[0];
  }

  @Override
  public long purgeExpired(int batchSize) {
    if (batchSize < 1 || batchSize > 100_000) {
      throw new IllegalArgumentException("batchSize must be between 1 and 100000, was " + batchSize);
    }
    long removed = 0;
    for (Iterator<Map.Entry<Id, Entry>> it = records.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Id, Entry> next = it.next();
      // remove(key, value) only removes the entry if no claim renewed it meanwhile
      if (clock.millis() >= next.getValue().expiresAt && records.remove(next.getKey(), next.getValue())) {
        removed++;
      }
    }
    return removed;
  }

  private record Id(Scope scope, IdempotencyKey key) {}

  private record Entry(Fingerprint fingerprint, String owner, long leaseUntil, StoredResponse response, long expiresAt) {}
}
