package dev.idem.core;

import java.util.Objects;

/**
 * Who and which operation an idempotency key belongs to: the authenticated principal plus the
 * operation (for example {@code "alice"} and {@code "POST /notes"}).
 *
 * <p>The same key in two scopes names two unrelated operations, so one principal's response is
 * never replayed to another. The scope must come from authentication and routing, never from a
 * field the caller controls.
 *
 * <p>Each part is 1 to {@value #MAX_PART_LENGTH} characters of valid Unicode text (no unpaired
 * surrogate) with no control character; the limit keeps the store's primary key within every database's index
 * limit. Immutable and thread-safe; equality by value.
 *
 * @param principal the authenticated principal (user id, client id, tenant), never {@code null}
 * @param operation the operation (for HTTP: the method and the route template), never {@code null}
 */
public record Scope(String principal, String operation) {

  /** The maximum length of each part, in characters. */
  public static final int MAX_PART_LENGTH = 200;

  /**
   * @throws NullPointerException if a part is {@code null}
   * @throws IllegalArgumentException if a part is empty, longer than {@value #MAX_PART_LENGTH}
   *     characters, or contains a control character or an unpaired surrogate
   */
  public Scope {
    check("principal", principal);
    check("operation", operation);
  }

  /**
   * Same as {@code new Scope(principal, operation)}.
   *
   * @throws NullPointerException if a part is {@code null}
   * @throws IllegalArgumentException if a part breaks a rule of the class
   */
  public static Scope of(String principal, String operation) {
    return new Scope(principal, operation);
  }

  private static void check(String name, String part) {
    Objects.requireNonNull(part, () -> "scope " + name + " must not be null");
    if (part.isEmpty()) {
      throw new IllegalArgumentException("scope " + name + " must not be empty");
    }
    if (part.length() > MAX_PART_LENGTH) {
      throw new IllegalArgumentException(
          "scope " + name + " is longer than " + MAX_PART_LENGTH + " characters");
    }
    for (int i = 0; i < part.length(); i++) {
      char c = part.charAt(i);
      if (Character.isISOControl(c)) {
        throw new IllegalArgumentException(
            "scope " + name + " contains a control character at index " + i);
      }
      // A lone surrogate is not text: drivers store it as '?', so two different scopes would
      // collide in the store and one principal could be replayed another's response.
      if (Character.isHighSurrogate(c) && i + 1 < part.length() && Character.isLowSurrogate(part.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        throw new IllegalArgumentException(
            "scope " + name + " contains an unpaired surrogate at index " + i + " (not valid Unicode text)");
      }
    }
  }
}
