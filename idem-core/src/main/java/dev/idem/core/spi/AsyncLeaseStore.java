package dev.idem.core.spi;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * The non-blocking counterpart of {@link LeaseStore}, for applications whose threads must never
 * wait on I/O (an event loop: Spring WebFlux, Reactor Netty, Vert.x): the same records, the same
 * operations and the same contract, each answered by a {@link CompletionStage} instead of a return
 * value. {@code dev.idem.core.AsyncLeaseIdempotency} is the engine that uses it.
 *
 * <p><b>Contract</b>: every rule of {@link LeaseStore} holds, operation for operation ({@code
 * claimAsync} is {@link LeaseStore#claim}, and so on), and is checked by {@code
 * dev.idem.testkit.AsyncLeaseStoreContract}, which runs {@code LeaseStoreContract} on the store:
 * atomic per record, the store's own clock, expiry at {@code now >= expiresAt}, a lease expired at
 * {@code now >= leaseUntil}, and repeated calls with the same owner token safe after an unknown
 * outcome.
 *
 * <p><b>Non-blocking.</b> A method returns without waiting for I/O or for a lock held across I/O;
 * its stage completes later, on a thread of the store's choosing (its client's I/O thread, or the
 * caller's when the answer is known at once, as for the in-memory store). Callers must not block in
 * what they chain on the stage. A store failure completes the stage exceptionally with an {@link
 * IdemStoreException} (never by throwing from the method), with the same meaning as in {@link
 * LeaseStore}: nothing was changed, or repeating the call with the same owner token is safe. A
 * stage never completes with {@code null}.
 *
 * <p>The method names differ from {@link LeaseStore}'s so that one class can implement both, as
 * {@link dev.idem.core.InMemoryLeaseStore} does. Implementations are thread-safe.
 */
public interface AsyncLeaseStore {

  /**
   * {@link LeaseStore#claim}, without blocking.
   *
   * @param request scope, key and fingerprint, never {@code null}
   * @param ownerToken the caller's owner token, 1 to 64 printable ASCII characters
   * @param lease how long the claim is held without completion, positive
   * @param retention how long the record lives after its claim; longer than {@code lease}
   * @return a stage that completes with what the store found and did (the five cases of {@link
   *     LeaseStore#claim}), or exceptionally with {@link IdemStoreException} if the store fails
   */
  CompletionStage<ClaimResult> claimAsync(IdempotentRequest request, String ownerToken, Duration lease, Duration retention);

  /**
   * {@link LeaseStore#complete}, without blocking: stores the response only if {@code ownerToken}
   * still holds the claim (fencing); idempotent for its own owner token and an equal response.
   *
   * @return a stage that completes with {@code true} if stored now or already stored by this owner
   *     with this response, {@code false} if the claim is not this owner's (nothing changed), or
   *     exceptionally with {@link IdemStoreException} if the store fails
   */
  CompletionStage<Boolean> completeAsync(
      Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention);

  /**
   * {@link LeaseStore#release}, without blocking: removes the claim only if {@code ownerToken} still
   * holds it; idempotent.
   *
   * @return a stage that completes with {@code true} if removed now or no live record is left,
   *     {@code false} if another owner holds the claim or the record is completed (nothing
   *     changed), or exceptionally with {@link IdemStoreException} if the store fails
   */
  CompletionStage<Boolean> releaseAsync(Scope scope, IdempotencyKey key, String ownerToken);

  /**
   * {@link LeaseStore#purgeExpired}, without blocking.
   *
   * @param batchSize 1 to 100 000
   * @return a stage that completes with how many records were deleted, or exceptionally with
   *     {@link IllegalArgumentException} if {@code batchSize} is out of range or {@link
   *     IdemStoreException} if the store fails
   */
  CompletionStage<Long> purgeExpiredAsync(int batchSize);
}
