package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The lease-mode contract that every {@link LeaseStore} Idem ships passes: {@link
 * LeaseStoreContract}'s claims, leases and completions, plus reading a key's status ({@link
 * KeyStatusReader}) and responses protected at rest ({@link ResponseProtection}). A backend runs it
 * by subclassing and implementing its hooks, all abstract, so that a missing one is a compile error
 * in the store's own test, not a failure at run time: {@link #store()}, {@link #statusReader()},
 * {@link #protectedStore}, {@link #rawResponse} and {@link #writeRawResponse}. The tests are never
 * copied per backend.
 *
 * <pre>{@code
 * class MyLeaseContractTest extends LeaseContract {
 *   private final MyLeaseStore store = new MyLeaseStore(...);
 *   @Override protected LeaseStore store() { return store; }
 *   @Override protected KeyStatusReader statusReader() { return store; }
 *   @Override protected LeaseStore protectedStore(ResponseProtection p) { return store.withProtection(p); }
 *   @Override protected byte[] rawResponse(Scope scope, IdempotencyKey key) { ... }
 *   @Override protected void writeRawResponse(Scope scope, IdempotencyKey key, byte[] bytes) { ... }
 * }
 * }</pre>
 */
public abstract class LeaseContract extends LeaseStoreContract {

  /**
   * A store of the same backend, over the same records as {@link #store()}, that writes and reads
   * responses through {@code protection}; for the response-protection tests. Every lease store
   * stores responses, so every backend implements this and the two raw accessors below (abstract,
   * so that a missing one is a compile error in the store's own test, not a failure at run time).
   *
   * @param protection how the store must seal and open stored responses, never {@code null}
   * @return a store over the same records, never {@code null}
   */
  protected abstract LeaseStore protectedStore(ResponseProtection protection);

  /**
   * @param scope the record's scope, never {@code null}
   * @param key the record's key, never {@code null}
   * @return the bytes the backend holds for a completed record's response, read directly from the
   *     table, the hash or the map (not through the store), or {@code null} if there are none
   * @throws Exception if the backend cannot be read
   */
  protected abstract byte @Nullable [] rawResponse(Scope scope, IdempotencyKey key) throws Exception;

  /**
   * Overwrites the bytes of a completed record's response directly in the backend, as someone with
   * write access to the store could.
   *
   * @param scope the record's scope, never {@code null}
   * @param key the record's key, never {@code null}
   * @param bytes what to write, never {@code null}
   * @throws Exception if the backend cannot be written
   */
  protected abstract void writeRawResponse(Scope scope, IdempotencyKey key, byte[] bytes) throws Exception;

  /**
   * @return the key status reader of the store under test: usually the store itself, which every
   *     store Idem ships implements ({@link KeyStatusReader}); abstract, so that a store without one
   *     is a compile error in its test, not a failure at run time (such a store runs {@link
   *     LeaseStoreContract} alone)
   */
  protected abstract KeyStatusReader statusReader();

  @Test
  void theStatusOfAnUnknownKeyIsAbsent() {
    IdempotentRequest request = request("k-status-unknown", "{}");
    assertThat(statusReader().status(request.scope(), request.key())).isEqualTo(KeyStatus.absent());
  }

  @Test
  void theStatusFollowsTheKeyFromClaimToCompletionOnTheStoresClock() {
    IdempotentRequest request = request("k-status", "{\"amount\":10}");
    Duration lease = Duration.ofSeconds(30);
    Duration retention = Duration.ofMinutes(5);
    assertThat(store().claim(request, "owner-s", lease, retention).state()).isEqualTo(ClaimResult.State.CLAIMED);

    KeyStatus running = statusReader().status(request.scope(), request.key());
    assertThat(running).isInstanceOf(KeyStatus.InProgress.class);
    KeyStatus.InProgress inProgress = (KeyStatus.InProgress) running;
    assertThat(inProgress.fingerprint()).isEqualTo(request.fingerprint());
    assertThat(inProgress.step()).isNull();
    assertThat(inProgress.leaseRemaining()).isPositive().isLessThanOrEqualTo(lease);
    assertThat(Duration.between(inProgress.leaseUntil(), inProgress.expiresAt())).as("expiry after the lease").isPositive();

    StoredResponse response = StoredResponse.builder(201).header("Content-Type", "text/plain").body("charged").build();
    assertThat(store().complete(request.scope(), request.key(), "owner-s", response, retention)).isTrue();
    KeyStatus done = statusReader().status(request.scope(), request.key());
    assertThat(done).isInstanceOf(KeyStatus.Completed.class);
    KeyStatus.Completed completed = (KeyStatus.Completed) done;
    assertThat(completed.fingerprint()).isEqualTo(request.fingerprint());
    assertThat(completed.status()).isEqualTo(201);
    assertThat(completed.completedAt()).as("the completion's time").isNotNull();
    assertThat(completed.completedAt()).isAfterOrEqualTo(inProgress.leaseUntil().minus(lease));
    // kept at least the retention after completion, and at most the lease longer (the claim's expiry)
    assertThat(Duration.between(completed.completedAt(), completed.expiresAt()))
        .isGreaterThanOrEqualTo(retention).isLessThanOrEqualTo(retention.plus(lease));
    assertThat(effects).as("reading a status runs nothing").hasValue(0);
  }

  @Test
  void aStatusReadChangesNothingAndAClaimWhoseLeaseRanOutStaysInProgressUntilTakenOver() throws Exception {
    IdempotentRequest request = request("k-status-lease", "{}");
    store().claim(request, "owner-a", SHORT_LEASE, Duration.ofMinutes(5));
    Thread.sleep(PAST_SHORT_LEASE.toMillis());
    KeyStatus stale = statusReader().status(request.scope(), request.key());
    assertThat(stale).isInstanceOf(KeyStatus.InProgress.class);
    assertThat(((KeyStatus.InProgress) stale).leaseRemaining()).isZero();
    ClaimResult takeover = store().claim(request, "owner-b", Duration.ofSeconds(30), Duration.ofMinutes(5));
    assertThat(takeover.state()).isEqualTo(ClaimResult.State.CLAIMED);
    assertThat(takeover.recovery()).as("the status read did not renew or take the claim").isTrue();
    assertThat(((KeyStatus.InProgress) statusReader().status(request.scope(), request.key())).leaseRemaining()).isPositive();
  }

  @Test
  void aReleasedKeyAndTheSameKeyInAnotherScopeReadAsAbsent() {
    LeaseIdempotency idem = engine().build();
    IdempotentRequest request = request("k-status-scope", "{}");
    idem.execute(request, ctx -> effect(201, "done"));
    assertThat(statusReader().status(request.scope(), request.key())).isInstanceOf(KeyStatus.Completed.class);
    assertThat(statusReader().status(Scope.of(principal + "-other", "POST /charges"), request.key()))
        .as("another principal's key").isEqualTo(KeyStatus.absent());
    assertThat(statusReader().status(Scope.of(principal, "POST /refunds"), request.key()))
        .as("another operation's key").isEqualTo(KeyStatus.absent());

    IdempotentRequest released = request("k-status-released", "{}");
    assertThatThrownBy(() -> idem.execute(released, ctx -> {
      throw new IllegalStateException("boom");
    })).isInstanceOf(IllegalStateException.class);
    assertThat(statusReader().status(released.scope(), released.key())).isEqualTo(KeyStatus.absent());
  }

  @Test
  void aStoredFailureReadsAsCompletedWithItsStatus() {
    LeaseIdempotency idem = engine().build();
    IdempotentRequest request = request("k-status-422", "{}");
    idem.execute(request, ctx -> effect(422, "invalid card"));
    KeyStatus status = statusReader().status(request.scope(), request.key());
    assertThat(status).isInstanceOf(KeyStatus.Completed.class);
    assertThat(((KeyStatus.Completed) status).status()).isEqualTo(422);
  }

  @Test
  void anExpiredKeyReadsAsAbsent() throws Exception {
    IdempotentRequest request = request("k-status-expired", "{}");
    Duration lease = Duration.ofMillis(200);
    Duration retention = Duration.ofMillis(700);
    store().claim(request, "owner-e", lease, retention);
    store().complete(request.scope(), request.key(), "owner-e", StoredResponse.of(201, "x"), retention);
    assertThat(statusReader().status(request.scope(), request.key())).isInstanceOf(KeyStatus.Completed.class);
    Thread.sleep(retention.plus(lease).plusMillis(300).toMillis());
    assertThat(statusReader().status(request.scope(), request.key())).isEqualTo(KeyStatus.absent());
  }

  @Test
  void theStatusOfAProtectedResponseIsReadWithoutItBeingStoredInClear() throws Exception {
    LeaseIdempotency idem = engineOn(protectedStore(TestKeyrings.KEY_A));
    IdempotentRequest request = request("k-status-secret", "{}");
    idem.execute(request, ctx -> secretEffect("s"));
    KeyStatusReader reader = (KeyStatusReader) protectedStore(TestKeyrings.KEY_A);
    KeyStatus status = reader.status(request.scope(), request.key());
    assertThat(status).isInstanceOf(KeyStatus.Completed.class);
    assertThat(((KeyStatus.Completed) status).status()).isEqualTo(201);
    assertThatThrownBy(() -> ((KeyStatusReader) protectedStore(TestKeyrings.ONLY_KEY_B)).status(request.scope(), request.key()))
        .as("a response it cannot open is refused, never guessed")
        .isInstanceOf(StoredResponseUnreadableException.class);
  }

  private StoredResponse secretEffect(String secret) {
    effects.incrementAndGet();
    return StoredResponse.builder(201).header("Content-Type", "text/plain").header("Location", "/charges/" + secret).body("receipt " + secret).build();
  }

  private LeaseIdempotency engineOn(LeaseStore store) {
    return LeaseIdempotency.builder(store).lease(Duration.ofSeconds(30)).retention(Duration.ofMinutes(5)).build();
  }

  @Test
  void protectedResponsesAreNotStoredInClearAndReplayExactly() throws Exception {
    LeaseIdempotency idem = engineOn(protectedStore(TestKeyrings.KEY_A));
    IdempotentRequest request = request("k-secret", "{}");
    String secret = "secret-" + UUID.randomUUID();
    Outcome first = idem.execute(request, ctx -> secretEffect(secret));

    byte[] raw = rawResponse(request.scope(), request.key());
    assertThat(raw).as("a stored response").isNotNull();
    assertThat(ResponseProtection.isProtected(raw)).isTrue();
    assertThat(new String(raw, StandardCharsets.ISO_8859_1)).doesNotContain(secret).doesNotContain("receipt");
    Outcome replay = idem.execute(request, ctx -> secretEffect("must not run"));
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());
    assertThat(replay.response().header("Location")).isEqualTo("/charges/" + secret);
    assertThat(effects).hasValue(1);
  }

  @Test
  void aRepeatedCompletionBySameOwnerIsRecognisedUnderProtection() {
    LeaseStore store = protectedStore(TestKeyrings.KEY_A);
    IdempotentRequest request = request("k-again", "{}");
    StoredResponse first = StoredResponse.of(201, "note 1");
    store.claim(request, "owner-a", Duration.ofMinutes(1), Duration.ofMinutes(5));
    assertThat(store.complete(request.scope(), request.key(), "owner-a", first, Duration.ofMinutes(5))).isTrue();
    assertThat(store.complete(request.scope(), request.key(), "owner-a", first, Duration.ofMinutes(5)))
        .as("a repetition after a lost acknowledgement, although every encryption has its own nonce").isTrue();
    assertThat(store.complete(request.scope(), request.key(), "owner-a", StoredResponse.of(201, "note 2"), Duration.ofMinutes(5))).isFalse();
    assertThat(store.complete(request.scope(), request.key(), "owner-b", first, Duration.ofMinutes(5))).isFalse();
    assertThat(store.claim(request, "owner-c", Duration.ofMinutes(1), Duration.ofMinutes(5)).response()).isEqualTo(first);
  }

  @Test
  void recordsProtectedWithTheOldKeyReplayAfterRotationWhileTheOldKeyIsKept() throws Exception {
    IdempotentRequest request = request("k-rotate", "{}");
    Outcome first = engineOn(protectedStore(TestKeyrings.KEY_A)).execute(request, ctx -> secretEffect("one"));

    LeaseIdempotency rotated = engineOn(protectedStore(TestKeyrings.KEYS_A_B_CURRENT_B));
    Outcome replay = rotated.execute(request, ctx -> secretEffect("must not run"));
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());

    IdempotentRequest next = request("k-rotate-2", "{}");
    Outcome written = rotated.execute(next, ctx -> secretEffect("two"));
    byte[] raw = rawResponse(next.scope(), next.key());
    assertThat(new String(raw, 3, raw[2], StandardCharsets.US_ASCII)).as("new records use the current key").isEqualTo("b");
    assertThat(rotated.execute(next, ctx -> secretEffect("must not run")).response()).isEqualTo(written.response());
    assertThat(effects).hasValue(2);
  }

  @Test
  void aProtectedResponseMovedToAnotherKeyIsRefusedNotReplayed() throws Exception {
    LeaseIdempotency idem = engineOn(protectedStore(TestKeyrings.KEY_A));
    IdempotentRequest source = request("k-source", "{}");
    IdempotentRequest target = request("k-target", "{}");
    idem.execute(source, ctx -> secretEffect("source"));
    idem.execute(target, ctx -> secretEffect("target"));

    writeRawResponse(target.scope(), target.key(), rawResponse(source.scope(), source.key()));

    assertThatThrownBy(() -> idem.execute(target, ctx -> secretEffect("must not run")))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("failed authentication");
    assertThat(idem.execute(source, ctx -> secretEffect("must not run")).replayed()).as("the source is intact").isTrue();
    assertThat(effects).as("the moved record's effect never runs again").hasValue(2);
  }

  @Test
  void aProtectedResponseUnderAnUnknownKeyIdIsRefusedNotReplayed() {
    IdempotentRequest request = request("k-unknown", "{}");
    engineOn(protectedStore(TestKeyrings.KEY_A)).execute(request, ctx -> secretEffect("a"));

    assertThatThrownBy(() -> engineOn(protectedStore(TestKeyrings.ONLY_KEY_B)).execute(request, ctx -> secretEffect("must not run")))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("key id 'a'");
    assertThatThrownBy(() -> engineOn(store()).execute(request, ctx -> secretEffect("must not run")))
        .as("protection turned off while protected records live")
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("protection is off");
    assertThat(effects).hasValue(1);
  }

  @Test
  void plaintextRecordsWrittenBeforeProtectionStillReplay() throws Exception {
    IdempotentRequest request = request("k-before", "{}");
    Outcome first = engine().build().execute(request, ctx -> secretEffect("clear"));
    assertThat(ResponseProtection.isProtected(rawResponse(request.scope(), request.key()))).isFalse();

    Outcome replay = engineOn(protectedStore(TestKeyrings.KEY_A)).execute(request, ctx -> secretEffect("must not run"));
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());
    assertThat(effects).hasValue(1);
  }
}
