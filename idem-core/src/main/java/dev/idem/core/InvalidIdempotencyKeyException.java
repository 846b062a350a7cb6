package dev.idem.core;

/**
 * A string was refused as an {@link IdempotencyKey}. The message names the rule that was broken
 * (empty, too long, or the offending character and its index), never the whole key, so it is safe
 * to log and to return to a client.
 *
 * <p>An HTTP integration maps it to 400 Bad Request (draft-ietf-httpapi-idempotency-key-header,
 * section 2.7). Immutable and thread-safe.
 */
public class InvalidIdempotencyKeyException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final String rule;

  /**
   * @param rule short name of the broken rule: {@code "empty"}, {@code "too-long"} or
   *     {@code "character"}
   * @param message human-readable explanation naming the rule
   */
  public InvalidIdempotencyKeyException(String rule, String message) {
    super(message);
    this.rule = rule;
  }

  /**
   * @return the short name of the broken rule: {@code "empty"}, {@code "too-long"} or {@code
   *     "character"}; never {@code null}
   */
  public String rule() {
    return rule;
  }
}
