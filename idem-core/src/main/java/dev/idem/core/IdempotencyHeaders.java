package dev.idem.core;

/**
 * The names of the header fields Idem reads and writes, in one place for the filter, the client and
 * the consumers. Field names are case-insensitive (RFC 9110 section 5.1); these are the spellings
 * Idem sends.
 */
public final class IdempotencyHeaders {

  /**
   * {@value}: the request header field that carries the idempotency key, a Structured Field String
   * (draft-ietf-httpapi-idempotency-key-header section 2; RFC 8941 section 3.3.3). Every answer to
   * a request with a well-formed key carries it back as the client sent it. Message consumers read
   * a message header of this name, when present, instead of the message id.
   */
  public static final String KEY = "Idempotency-Key";

  /**
   * {@value}: the response header field, with the value {@code true}, on an answer replayed from
   * the stored response. Idem's own (the draft defines none); absent from a first answer.
   */
  public static final String REPLAYED = "Idempotent-Replayed";

  /**
   * {@value}: the response header field on a 409 (in progress) or 503 (outcome unknown) answer,
   * in whole seconds, saying when a retry with the same key can expect a final answer (RFC 9110
   * section 10.2.3).
   */
  public static final String RETRY_AFTER = "Retry-After";

  private IdempotencyHeaders() {}
}
