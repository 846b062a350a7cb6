package dev.idem.servlet;

/**
 * Whether a route needs the {@code Idempotency-Key} request header field.
 *
 * <p>The draft (draft-ietf-httpapi-idempotency-key-header, section 2.7) lets a resource document
 * that an operation requires the field and answer 400 when it is missing; section 2.5 lets a client
 * send it where the server may ignore it. Either way a <em>malformed</em> field is refused with 400.
 */
public enum KeyRequirement {
  /**
   * A request without the field is refused with 400 Bad Request and an RFC 9457 problem; the handler
   * does not run.
   */
  REQUIRED,
  /**
   * A request without the field runs normally and is never deduplicated: each one runs the handler,
   * nothing is stored. A request with the field is deduplicated.
   */
  OPTIONAL
}
