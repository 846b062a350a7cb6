package dev.idem.core;

import java.util.Objects;

/**
 * A repeated request whose operation ran and was answered, but whose answer was too large to store
 * ({@link StoredResponse#bodyStored()} is {@code false}): the effect is not run again, and the
 * original answer cannot be given back. Look the result up another way (for example by the
 * resource the operation created).
 *
 * <p>An HTTP integration maps it to 422 with an RFC 9457 problem of type {@code
 * response-too-large-to-replay} that states the original status. Immutable and thread-safe.
 */
public class ResponseNotStoredException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final int originalStatus;
  private final long originalBodyBytes;

  /**
   * @param key the repeated key, never {@code null}
   * @param stored the record of the answer, never {@code null}; its {@link
   *     StoredResponse#bodyStored()} is expected to be {@code false}
   * @throws NullPointerException if an argument is {@code null}
   */
  public ResponseNotStoredException(IdempotencyKey key, StoredResponse stored) {
    super("the operation of idempotency key '" + Objects.requireNonNull(key, "key") + "' already ran and answered with status "
        + Objects.requireNonNull(stored, "stored").status() + " and a body of " + describe(stored.answeredBodyLength())
        + ", too large to be stored; it is not run again and its answer cannot be replayed");
    this.originalStatus = stored.status();
    this.originalBodyBytes = stored.answeredBodyLength();
  }

  private static String describe(long bytes) {
    return bytes < 0 ? "unknown length" : bytes + " bytes";
  }

  /** @return the status of the original answer, 100 to 599 */
  public int originalStatus() {
    return originalStatus;
  }

  /** @return the length of the original answer's body in bytes, or -1 if unknown */
  public long originalBodyBytes() {
    return originalBodyBytes;
  }
}
