package dev.idem.core;

/**
 * The caller's effect in lease mode: it runs outside any store transaction (it may call a payment
 * API, send an e-mail, publish a message) while its claim is held.
 */
@FunctionalInterface
public interface LeaseEffect {

  /**
   * @param context the scope, key and whether this run is a recovery, never {@code null}
   * @return the response to store and return, never {@code null}
   * @throws Exception anything; the claim is then released so that a retry runs again. A checked
   *     exception reaches the caller wrapped in {@link EffectFailedException}, an unchecked one as
   *     it is.
   */
  StoredResponse run(LeaseContext context) throws Exception;
}
