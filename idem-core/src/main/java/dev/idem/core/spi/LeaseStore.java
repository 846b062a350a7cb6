package dev.idem.core.spi;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import java.time.Duration;

/**
 * A store for lease mode: records keyed by (scope, idempotency key), each either a claim held by an
 * owner token until its lease runs out, or a completed operation with its stored response.
 *
 * <p><b>Contract</b> (checked for every implementation by {@code dev.idem.testkit.LeaseContract}):
 *
 * <ul>
 *   <li>Every operation is atomic for its record; concurrent calls on one record behave as if they
 *       ran one after the other.
 *   <li>Time is the store's own clock (the database's or the Redis server's), never the callers':
 *       two application nodes with skewed clocks cannot both hold a claim.
 *   <li>A record whose expiry has passed counts as
 *       absent for every operation, from the exact instant of expiry ({@code now >= expiresAt}),
 *       whether or not it has been purged.
 *   <li>A lease has expired when {@code now >= leaseUntil}.
 * </ul>
 *
 * <p>Implementations are thread-safe. Every method throws {@link IdemStoreException} when the store
 * fails; then nothing was changed, or (for a write whose outcome is unknown) calling it again with
 * the same owner token is safe and answers as the first call would have: claim recognises its own
 * claim, and complete and release are idempotent for their own owner token.
 */
public interface LeaseStore {

  /**
   * Claims the record for {@code ownerToken}, or reports who has it:
   *
   * <ol>
   *   <li>absent or expired: a new claim, {@link ClaimResult#claimed claimed} (no recovery);
   *   <li>a claim already held by {@code ownerToken} (a retry after a write whose outcome was
   *       unknown): its lease is renewed, claimed (no recovery);
   *   <li>a claim of another owner whose lease expired, with the same fingerprint: taken over,
   *       claimed with {@code recovery = true};
   *   <li>a claim of another owner with a live lease, or with another fingerprint: {@link
   *       ClaimResult#inProgress in progress}, nothing changed;
   *   <li>completed: {@link ClaimResult#completed completed} with the stored response.
   * </ol>
   *
   * @param request scope, key and fingerprint
   * @param ownerToken the caller's owner token, 1 to 64 printable ASCII characters
   * @param lease how long the claim is held without completion, positive
   * @param retention how long the record lives after its claim, and at least after its completion;
   *     longer than {@code lease}
   * @return what the store found and did, never {@code null}
   * @throws IdemStoreException if the store fails
   */
  ClaimResult claim(IdempotentRequest request, String ownerToken, Duration lease, Duration retention);

  /**
   * Stores the response and marks the record completed, only if {@code ownerToken} still holds the
   * claim (fencing). The record then lives at least {@code retention} from now; a store may keep
   * the expiry its claim set when that is already later (by at most the lease), so that a
   * completion need not rewrite an indexed column.
   *
   * <p>Idempotent for its own owner token: when the record is already completed by {@code
   * ownerToken} with an equal response (status, header fields and body bytes; a repeated call after
   * a write whose acknowledgement was lost, or a client that re-sends a command after a timeout),
   * it returns {@code true} and changes nothing, so that the caller can retry a completion whose
   * outcome was unknown.
   *
   * @return {@code true} if stored now or already stored by this owner with this response; {@code
   *     false} if another owner holds the claim, the record is gone or expired, or it is completed by
   *     another owner or with another response, in which case nothing changed
   * @throws IdemStoreException if the store fails
   */
  boolean complete(Scope scope, IdempotencyKey key, String ownerToken, StoredResponse response, Duration retention);

  /**
   * Removes the claim, only if {@code ownerToken} still holds it, so that the next attempt runs the
   * operation again.
   *
   * <p>Idempotent: a repeated release by the owner finds no record and returns {@code true}, so
   * that the caller can retry a release whose outcome was unknown.
   *
   * @return {@code true} if removed now, or if there is no live record (already released, or
   *     expired); {@code false} if another owner holds the claim or the record is completed, in
   *     which case nothing changed
   * @throws IdemStoreException if the store fails
   */
  boolean release(Scope scope, IdempotencyKey key, String ownerToken);

  /**
   * Deletes expired records, at most {@code batchSize} per step, without long locks.
   *
   * @param batchSize 1 to 100 000
   * @return how many records were deleted
   * @throws IllegalArgumentException if {@code batchSize} is out of range
   * @throws IdemStoreException if the store fails
   */
  long purgeExpired(int batchSize);
}
