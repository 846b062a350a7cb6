package dev.idem.core;

import java.util.concurrent.CompletionStage;

/**
 * An operation of {@link AsyncLeaseIdempotency} that runs without blocking its caller: it starts
 * the work and returns a stage that completes with the response to store (or to release, per the
 * {@link ResponsePolicy}). The non-blocking counterpart of {@link Effect}.
 */
@FunctionalInterface
public interface AsyncEffect {

  /**
   * Starts the operation. It must not block: the engine calls it on whatever thread completed the
   * claim (an event loop, for a non-blocking store).
   *
   * @param context the claim ({@link EffectContext#lease()}): scope, key, owner token, and whether
   *     this run takes over an expired lease; never {@code null}
   * @return a stage that completes with the response, never {@code null}; it may complete
   *     exceptionally, which releases the claim
   * @throws Exception when the operation fails before it returns a stage (as a failed stage would)
   */
  CompletionStage<StoredResponse> run(EffectContext context) throws Exception;
}
