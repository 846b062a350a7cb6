package dev.idem.core;

import java.util.Objects;

/**
 * What a lease-mode effect knows about its run. Pass {@link #key()} downstream (to a payment
 * provider, a queue) so that the other side can deduplicate too, which matters most when {@link
 * #recovery()} is {@code true}. Immutable and thread-safe.
 *
 * @param scope the scope of the operation, never {@code null}
 * @param key the idempotency key, never {@code null}
 * @param ownerToken the owner token holding the claim, never {@code null}
 * @param recovery {@code true} when this run took over the expired lease of an earlier owner whose
 *     effect may already have happened
 */
public record LeaseContext(Scope scope, IdempotencyKey key, String ownerToken, boolean recovery) {

  /** @throws NullPointerException if a component is {@code null} */
  public LeaseContext {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(ownerToken, "ownerToken");
  }
}
