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
 * <p>Refusals and store failures are results, never exceptions; the only exceptions are the
 * effect's own (and programming errors such as a {@code null} argument). Each implementation tells
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
}
