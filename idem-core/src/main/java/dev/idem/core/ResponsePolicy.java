package dev.idem.core;

import java.util.Objects;

/**
 * Decides whether a response is stored (and replayed to every retry) or released (so that a retry
 * runs the operation again). Contract rule 6: whether a failure is stored is a policy, not an
 * accident.
 *
 * <p>{@link #standard()} stores successes, redirections and deterministic client errors, and
 * releases server errors (5xx), the transient client statuses 408 Request Timeout, 425 Too Early
 * and 429 Too Many Requests (RFC 9110 sections 15.5.9 and 15.6; RFC 8470 section 5.2; RFC 6585
 * section 4), for which the same request may succeed later, and 406 Not Acceptable (RFC 9110
 * section 15.5.7): it answers the {@code Accept} header, which is not part of the request's
 * fingerprint, and frameworks produce it after the handler ran, when the result cannot be written
 * in any acceptable form; stored, it would be replayed to a retry that accepts JSON, and the key
 * could never yield the operation's answer. Released, a transactional effect rolls back with it.
 * Implementations must be thread-safe and must not throw.
 */
@FunctionalInterface
public interface ResponsePolicy {

  /**
   * @param response the response the effect returned, never {@code null}
   * @return {@code true} to store it with the key; {@code false} to release the claim (transactional
   *     mode: roll the whole transaction back) and return the response without storing it
   */
  boolean shouldStore(StoredResponse response);

  /** @return the default policy described on the type; stateless and thread-safe */
  static ResponsePolicy standard() {
    return response -> {
      int s = response.status();
      return s < 500 && s != 406 && s != 408 && s != 425 && s != 429;
    };
  }

  /** @return a policy that stores every response, whatever its status */
  static ResponsePolicy storeAll() {
    return response -> true;
  }

  /**
   * @param policy the policy to combine with, never {@code null}
   * @return a policy that stores only what both this policy and {@code policy} store
   */
  default ResponsePolicy and(ResponsePolicy policy) {
    Objects.requireNonNull(policy, "policy");
    return response -> shouldStore(response) && policy.shouldStore(response);
  }
}
