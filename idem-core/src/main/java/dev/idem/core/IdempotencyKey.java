package dev.idem.core;

import org.jspecify.annotations.Nullable;

/**
 * An idempotency key: the opaque, client-chosen name of one <em>intended operation</em> (not of
 * one attempt, not of one payload).
 *
 * <p>Rules, checked eagerly by {@link #of(String)}:
 *
 * <ul>
 *   <li>at least 1 character and at most {@value #DEFAULT_MAX_LENGTH} characters by default
 *       ({@link #of(String, int)} takes another maximum);
 *   <li>only printable US-ASCII, {@code 0x20} (space) to {@code 0x7E} ({@code ~}). Control
 *       characters, DEL and anything outside ASCII are refused, so a key can travel unchanged in an
 *       HTTP header field (RFC 9110 section 5.5) and in every store's key column.
 * </ul>
 *
 * <p>The draft "The Idempotency-Key HTTP Header Field" (draft-ietf-httpapi-idempotency-key-header,
 * section 2) recommends a UUID or another random identifier with enough entropy; Idem does not
 * impose a format beyond the rules above. Instances are immutable and thread-safe; equality is by
 * value and case-sensitive.
 */
public final class IdempotencyKey implements Comparable<IdempotencyKey> {

  /** The default maximum length, in characters (= bytes, since keys are ASCII). */
  public static final int DEFAULT_MAX_LENGTH = 255;

  private final String value;

  private IdempotencyKey(String value) {
    this.value = value;
  }

  /**
   * Validates {@code value} with the default maximum length of {@value #DEFAULT_MAX_LENGTH}.
   *
   * @param value the key as sent by the client, not trimmed or otherwise altered
   * @return the key
   * @throws NullPointerException if {@code value} is {@code null}
   * @throws InvalidIdempotencyKeyException if {@code value} is empty, longer than {@value
   *     #DEFAULT_MAX_LENGTH} characters, or contains a character outside {@code 0x20..0x7E}
   */
  public static IdempotencyKey of(String value) {
    return of(value, DEFAULT_MAX_LENGTH);
  }

  /**
   * Validates {@code value} with a custom maximum length.
   *
   * @param value the key as sent by the client
   * @param maxLength the maximum number of characters, from 1 to {@value #DEFAULT_MAX_LENGTH}
   *     (the width of every store's key column)
   * @return the key
   * @throws NullPointerException if {@code value} is {@code null}
   * @throws IllegalArgumentException if {@code maxLength} is outside 1..{@value
   *     #DEFAULT_MAX_LENGTH}
   * @throws InvalidIdempotencyKeyException if a rule is broken; {@link
   *     InvalidIdempotencyKeyException#rule()} says which
   */
  public static IdempotencyKey of(String value, int maxLength) {
    if (value == null) {
      throw new NullPointerException("idempotency key must not be null");
    }
    if (maxLength < 1 || maxLength > DEFAULT_MAX_LENGTH) {
      throw new IllegalArgumentException(
          "maxLength must be between 1 and " + DEFAULT_MAX_LENGTH + ", was " + maxLength);
    }
    if (value.isEmpty()) {
      throw new InvalidIdempotencyKeyException(
          "empty", "idempotency key must not be empty (1 to " + maxLength + " characters)");
    }
    if (value.length() > maxLength) {
      throw new InvalidIdempotencyKeyException(
          "too-long",
          "idempotency key is too long: "
              + value.length()
              + " characters, at most "
              + maxLength
              + " allowed");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7E) {
        throw new InvalidIdempotencyKeyException(
            "character",
            String.format(
                "idempotency key must be printable US-ASCII (0x20-0x7E): character U+%04X at index %d is not",
                (int) c, i));
      }
    }
    return new IdempotencyKey(value);
  }

  /**
   * @return the key exactly as given, never {@code null}
   */
  public String value() {
    return value;
  }

  @Override
  public int compareTo(IdempotencyKey other) {
    return value.compareTo(other.value);
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof IdempotencyKey && ((IdempotencyKey) o).value.equals(value);
  }

  @Override
  public int hashCode() {
    return value.hashCode();
  }

  /** Returns the key itself, so that it reads naturally in log lines. */
  @Override
  public String toString() {
    return value;
  }
}
