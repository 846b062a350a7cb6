package dev.idem.core;

import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * A {@link LeaseStore} in the memory of one JVM, for unit tests of code that uses Idem and for
 * single-process tools. Records are lost when the process ends, so it is no substitute for a real
 * store in production.
 *
 * <p>Its clock is the one given to {@link #InMemoryLeaseStore(Clock)} (by default the system UTC
 * clock), which plays the role of a database's clock; a test can pass a controllable clock to move
 * time past a lease or a retention. A completion sets the record's expiry to exactly the retention
 * after it, by that clock, so a completed key is kept exactly the retention (or until the process
 * ends). Thread-safe: each record is updated atomically.
 *
 * <p>Each completed record keeps its response as the bytes a database would hold, written and read
 * through its {@link ResponseProtection} (in clear by default), so that code using protection can be
 * tested without a database; {@link #storedResponseBytes} and {@link #replaceStoredResponseBytes}
 * let a test look at and alter those bytes as someone with access to a store could.
 *
 * <p>It is also an {@link AsyncLeaseStore} over the same records: each {@code *Async} method does
 * what its blocking counterpart does, at once on the caller's thread (a map update, no I/O and no
 * lock held across one), and returns an already completed stage, failed with the exception the
 * blocking method would have thrown.
 */
public final class InMemoryLeaseStore implements LeaseStore, AsyncLeaseStore, KeyStatusReader {

  private final Clock clock;
  private final ResponseProtection protection;
  private final Map<Id, Entry> records;

  /** A store on the system UTC clock. */
  public InMemoryLeaseStore() {
    this(Clock.systemUTC());
  }

  /** @param clock the store's clock, never {@code null} */
  public InMemoryLeaseStore(Clock clock) {
    this(clock, ResponseProtection.none());
  }

  /**
   * @param clock the store's clock, never {@code null}
   * @param protection how responses are kept: {@link ResponseProtection#none()} (in clear) or a
   *     keyring; never {@code null}
   */
  public InMemoryLeaseStore(Clock clock, ResponseProtection protection) {
    this(clock, protection, new ConcurrentHashMap<>());
  }

  private InMemoryLeaseStore(Clock clock, ResponseProtection protection, Map<Id, Entry> records) {
    this.clock = Objects.requireNonNull(clock, "clock");
    this.protection = Objects.requireNonNull(protection, "protection");
    this.records = records;
  }

  /**
   * A store over the same records and clock whose responses are written and read through {@code
   * protection}, as after an application restarted with another keyring (turning protection on or
   * off, or rotating the current key).
   *
   * @param protection never {@code null}
   * @return a new store sharing this one's records
   */
  public InMemoryLeaseStore withProtection(ResponseProtection protection) {
    return new InMemoryLeaseStore(clock, protection, records);
  }

  /**
   * The bytes this store holds for a record's stored response, as a database column would hold
   * them: for tests that check what is kept at rest.
   *
   * @return a copy, or {@code null} when the record is absent or not completed
   */
  public byte @Nullable [] storedResponseBytes(Scope scope, IdempotencyKey key) {
    Entry e = records.get(new Id(scope, key));
    return e == null || e.response == null ? null : e.response.clone();
  }

  /**
   * Replaces the bytes of a completed record's stored response, as someone with write access to a
   * database could: for tests of tampering and of ciphertexts moved between records.
   *
   * @param bytes the new bytes, copied; never {@code null}
   * @return whether a completed record was there to change
   */
  public boolean replaceStoredResponseBytes(Scope scope, IdempotencyKey key, byte[] bytes) {
    byte[] copy = Objects.requireNonNull(bytes, "bytes").clone();
    boolean[] done = {false};
    records.computeIfPresent(new Id(scope, key), (id, e) -> {
      if (e.response == null) {
        return e;
      }
      done[0] = true;
      return new Entry(e.fingerprint, e.owner, e.leaseUntil, copy, e.expiresAt, e.completedAt);
    });
    return done[0];
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
      Entry fresh = new Entry(request.fingerprint(), ownerToken, now + lease.toMillis(), null, now + retention.toMillis(), 0);
      if (e == null || now >= e.expiresAt) {
        result.set(ClaimResult.claimed(request.fingerprint(), false));
        return fresh;
      }
      if (e.response != null) {
        result.set(ClaimResult.completed(e.fingerprint, protection.open(request.scope(), request.key(), e.fingerprint, e.response)));
        return e;
      }
      if (e.owner.equals(ownerToken)) {
        result.set(ClaimResult.claimed(e.fingerprint, false));
        return new Entry(e.fingerprint, ownerToken, now + lease.toMillis(), null, e.expiresAt, 0);
      }
      if (now >= e.leaseUntil && e.fingerprint.equals(request.fingerprint())) {
        result.set(ClaimResult.claimed(e.fingerprint, true));
        return new Entry(e.fingerprint, ownerToken, now + lease.toMillis(), null, Math.max(e.expiresAt, now + retention.toMillis()), 0);
      }
      result.set(ClaimResult.inProgress(e.fingerprint, Duration.ofMillis(Math.max(0, e.leaseUntil - now))));
      return e;
    });
    return Objects.requireNonNull(result.get(), "every branch of compute sets the result");
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
        // a repeated completion by this owner: already done if it stored an equal response
        done[0] = protection.open(scope, key, e.fingerprint, e.response).equals(response);
        return e;
      }
      done[0] = true;
      byte[] stored = protection.seal(scope, key, e.fingerprint, response);
      return new Entry(e.fingerprint, e.owner, e.leaseUntil, stored, now + retention.toMillis(), now);
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

  /** {@link #claim}, answered at once: a completed stage, or a failed one with what it threw. */
  @Override
  public CompletionStage<ClaimResult> claimAsync(IdempotentRequest request, String ownerToken, Duration lease, Duration retention) {
    try {
      return CompletableFuture.completedFuture(claim(request, ownerToken, lease, retention));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@link #complete}, answered at once: a completed stage, or a failed one with what it threw. */
  @Override
  public CompletionStage<Boolean> completeAsync(
      Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention) {
    try {
      return CompletableFuture.completedFuture(complete(scope, key, ownerToken, response, retention));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@link #release}, answered at once: a completed stage, or a failed one with what it threw. */
  @Override
  public CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String ownerToken) {
    try {
      return CompletableFuture.completedFuture(release(scope, key, ownerToken));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@link #purgeExpired}, answered at once: a completed stage, or a failed one with what it threw. */
  @Override
  public CompletionStage<Long> purgeExpiredAsync(int batchSize) {
    try {
      return CompletableFuture.completedFuture(purgeExpired(batchSize));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>One read of the record, on this store's clock; a protected response is opened to read its
   * status.
   */
  @Override
  public KeyStatus status(Scope scope, IdempotencyKey key) {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Entry e = records.get(new Id(scope, key));
    long now = clock.millis();
    if (e == null || now >= e.expiresAt) {
      return KeyStatus.absent();
    }
    if (e.response != null) {
      int status = protection.open(scope, key, e.fingerprint, e.response).status();
      return new KeyStatus.Completed(e.fingerprint, status, Instant.ofEpochMilli(e.completedAt), Instant.ofEpochMilli(e.expiresAt));
    }
    return new KeyStatus.InProgress(e.fingerprint, Instant.ofEpochMilli(e.leaseUntil),
        Duration.ofMillis(Math.max(0, e.leaseUntil - now)), null, Instant.ofEpochMilli(e.expiresAt));
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

  /**
   * {@code response}: the stored bytes, {@code null} while in progress; never changed in place.
   * {@code completedAt}: when the response was stored (ms on the store's clock), 0 while in progress.
   */
  private record Entry(Fingerprint fingerprint, String owner, long leaseUntil, byte @Nullable [] response, long expiresAt, long completedAt) {}
}
