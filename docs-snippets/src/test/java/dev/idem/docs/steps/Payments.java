package dev.idem.docs.steps;

/** A payment service that honours idempotency keys: one charge per key, its answer repeated. */
public interface Payments {

  /**
   * @return the charge's id
   * @throws Exception if the charge's answer did not arrive (the charge may have been made)
   */
  String charge(String idempotencyKey, String rider, long cents) throws Exception;
}
