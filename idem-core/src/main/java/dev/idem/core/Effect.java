package dev.idem.core;

import java.sql.Connection;

/**
 * The operation an {@link IdempotencyEngine} runs at most once per scope and key: in lease mode
 * outside any store transaction while its claim is held, in transactional mode inside the
 * transaction that also holds the key's record.
 */
@FunctionalInterface
public interface Effect {

  /**
   * @param context what the engine knows about this run: the claim's {@link LeaseContext} in lease
   *     mode, the transaction's {@link Connection} in transactional mode; never {@code null}
   * @return the response to store and return, never {@code null}
   * @throws Exception anything; nothing is kept of the attempt (the claim is released, or the
   *     transaction rolled back), so that a retry runs again. The engine rethrows it: an unchecked
   *     exception as it is, a checked one wrapped in {@link EffectFailedException}.
   */
  StoredResponse run(EffectContext context) throws Exception;
}
