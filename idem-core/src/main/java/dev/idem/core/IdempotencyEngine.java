package dev.idem.core;

/**
 * Runs an {@link Effect} at most once per scope and idempotency key and says what happened, as an
 * {@link AttemptResult}: the effect ran and its response is stored, ran and was released, was
 * replayed, was refused (the key is used with another request, or in progress), ran but nothing of
 * it was kept, or ran with an outcome the engine cannot know. Both modes implement it:
 *
 * <ul>
 *   <li>lease mode, {@link LeaseIdempotency}: the claim commits before the effect runs, so the
 *       effect may call anything (a payment API, a message broker);
 *   <li>transactional mode ({@code dev.idem.jdbc.TransactionalIdempotency}): the claim, the
 *       effect's writes and the stored response commit in one transaction of the effect's own
 *       database.
 * </ul>
 *
 * <p>From {@link #attempt}, refusals and store failures are results, never exceptions; the only
 * exceptions are the effect's own (and programming errors such as a {@code null} argument). For
 * callers that prefer exceptions, {@link #execute} is the same attempt, unwrapped. Each implementation tells
 * its {@link IdemListener} of every result through {@link IdemListener#attempted}, once.
 *
 * <p>Implementations are thread-safe: one instance serves every caller.
 */
@FunctionalInterface
public interface IdempotencyEngine {

  /**
   * Runs {@code effect} at most once for the request's scope and key, or answers from the store.
   *
   * @param request the scope, key and fingerprint, never {@code null}
   * @param effect the operation, never {@code null}
   * @return what happened, never {@code null}
   * @throws NullPointerException if an argument is {@code null}
   * @throws EffectFailedException if the effect threw a checked exception (nothing of it is kept)
   * @throws IllegalStateException if the effect returned {@code null} (nothing of it is kept)
   * @throws RuntimeException any unchecked exception of the effect, as it is (nothing of it is
   *     kept)
   */
  AttemptResult attempt(IdempotentRequest request, Effect effect);

  /**
   * The same attempt for callers that prefer exceptions: {@link #attempt}, then {@link
   * AttemptResult#outcomeOrThrow()}.
   *
   * @param request the scope, key and fingerprint, never {@code null}
   * @param effect the operation, never {@code null}
   * @return executed now (its response stored, or released by the {@link ResponsePolicy}) or
   *     replayed from the store; never {@code null}
   * @throws IdempotencyKeyReusedException if the key was used in this scope with another payload
   * @throws RequestInProgressException if another attempt with the key is running
   * @throws OutcomeUnknownException if the effect ran and whether its result was kept is unknown
   *     ({@link AttemptResult.Kind#OUTCOME_UNKNOWN}); retry with the same key after its {@code
   *     retryAfter()}
   * @throws LeaseLostException lease mode: the effect ran but the lease was taken over before completion
   * @throws StoredResponseUnreadableException if the key is answered but its stored response cannot be read
   * @throws IdemStoreException if the store failed, or the transaction rolled back ({@link
   *     AttemptResult.Kind#ROLLED_BACK}, {@link AttemptResult.Kind#REQUEST_FAILED})
   * @throws EffectFailedException if the effect threw a checked exception (nothing of it is kept)
   * @throws RuntimeException any unchecked exception of the effect, as it is (nothing of it is kept)
   */
  default Outcome execute(IdempotentRequest request, Effect effect) {
    return attempt(request, effect).outcomeOrThrow();
  }
}
