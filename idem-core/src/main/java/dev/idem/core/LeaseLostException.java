package dev.idem.core;

/**
 * Lease mode: the caller no longer owns the claim it tries to complete or release. Its lease
 * expired and another attempt took the claim over (with another owner token), or the record expired
 * and was purged. Nothing was changed: this is the fencing rule, a stale owner can never overwrite
 * the current owner's result.
 *
 * <p>The effect of the stale owner may nevertheless have happened; the current owner was told that
 * it runs a recovery and should pass the same idempotency key downstream. Immutable and thread-safe.
 */
public class LeaseLostException extends IdemException {
  private static final long serialVersionUID = 1L;

  /**
   * @param key the key whose claim was lost, never {@code null}
   * @param action what the stale owner tried, {@code "complete"} or {@code "release"}
   */
  public LeaseLostException(IdempotencyKey key, String action) {
    super("cannot " + action + " idempotency key '" + key + "': this owner's lease expired and the claim was taken over or removed; nothing was changed");
  }
}
