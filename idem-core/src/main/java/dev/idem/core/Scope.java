package dev.idem.core;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

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

  /** What {@link #principalPart} puts before a hashed name. */
  private static final String HASHED_PREFIX = "sha256:";

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

  /**
   * Turns the name of whoever sent a request, as an application or framework resolved it, into the
   * principal part of a scope, so that every adapter (the HTTP filter, {@code @Idempotent} methods)
   * scopes the same caller alike.
   *
   * <p>A name is used as it is when it is a valid part (see the class). Otherwise (longer than
   * {@value #MAX_PART_LENGTH} characters, a control character, an unpaired surrogate) it is
   * replaced by {@code "sha256:"} and the 64 lower-case hex digits of the SHA-256 of its UTF-16
   * code units (big-endian, lossless even for an unpaired surrogate), so that two different
   * principals never share a scope and none is refused. To keep that mapping one-to-one, a name
   * that already starts with {@code "sha256:"} is hashed too, and so is a name equal to {@code
   * anonymous}: an account called "anonymous" does not share the scope of anonymous callers.
   * Stateless and thread-safe.
   *
   * @param resolved the resolved name; {@code null} or empty for an anonymous caller
   * @param anonymous the principal part of anonymous callers, a valid part; never {@code null}
   * @return the principal part, a valid part; {@code anonymous} exactly when {@code resolved} is
   *     {@code null} or empty; never {@code null}
   * @throws NullPointerException if {@code anonymous} is {@code null}
   */
  public static String principalPart(@Nullable String resolved, String anonymous) {
    Objects.requireNonNull(anonymous, "anonymous");
    if (resolved == null || resolved.isEmpty()) {
      return anonymous;
    }
    if (resolved.equals(anonymous) || resolved.startsWith(HASHED_PREFIX) || !valid(resolved)) {
      return HASHED_PREFIX + Fingerprint.ofBytes(utf16(resolved)).hex();
    }
    return resolved;
  }

  /** Every UTF-16 code unit as two bytes: lossless, even for an unpaired surrogate. */
  private static byte[] utf16(String s) {
    byte[] out = new byte[s.length() * 2];
    for (int i = 0; i < s.length(); i++) {
      out[2 * i] = (byte) (s.charAt(i) >> 8);
      out[2 * i + 1] = (byte) s.charAt(i);
    }
    return out;
  }

  private static boolean valid(String part) {
    try {
      check("principal", part);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
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
