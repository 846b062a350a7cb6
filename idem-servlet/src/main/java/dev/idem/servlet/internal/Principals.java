package dev.idem.servlet.internal;

import dev.idem.core.Fingerprint;
import dev.idem.core.Scope;

/**
 * Turns a resolved principal name into the principal part of a {@link Scope}. Stateless and
 * thread-safe.
 *
 * <p>A name is used as it is when it is a valid scope part. Otherwise (longer than {@value
 * Scope#MAX_PART_LENGTH} characters, a control character, an unpaired surrogate) it is replaced by
 * {@code "sha256:"} and the 64 hex digits of the SHA-256 of its UTF-16 code units (big-endian, lossless even
 * for an unpaired surrogate), so that two different
 * principals never share a scope and none is refused. To keep that mapping one-to-one, a name that
 * already starts with {@code "sha256:"} is hashed too, and so is an authenticated name equal to the
 * anonymous principal: an account called "anonymous" does not share the scope of anonymous callers.
 */
public final class Principals {

  static final String HASHED_PREFIX = "sha256:";

  private Principals() {}

  /**
   * @param resolved the resolver's answer, may be {@code null} or empty (anonymous)
   * @param anonymous the configured anonymous principal, a valid scope part
   * @return the scope principal, never {@code null}
   */
  public static String scopePrincipal(String resolved, String anonymous) {
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
      Scope.of(part, "x");
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
