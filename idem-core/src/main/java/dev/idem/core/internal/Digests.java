package dev.idem.core.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * SHA-256 and lower-case hex for {@code idem-core}: one place that knows SHA-256 is always there
 * (every Java platform must provide it) and how bytes such as a digest are written as text
 * ({@link HexFormat}, lower case, no separators).
 *
 * <p>Not part of Idem's API, and not for other modules either: they use {@link MessageDigest} and
 * {@link HexFormat} directly. Stateless and
 * thread-safe; each {@link MessageDigest} it returns belongs to the caller.
 */
public final class Digests {

  private static final HexFormat HEX = HexFormat.of();
  private static final MessageDigest PROTOTYPE = getInstance();

  private Digests() {}

  /**
   * @return a new SHA-256 digest in its initial state, for a caller that feeds it in parts; never
   *     {@code null}, not thread-safe (use it on one thread)
   */
  public static MessageDigest newSha256() {
    try {
      // cloning the provider's prototype skips the provider look-up getInstance does on every call
      return (MessageDigest) PROTOTYPE.clone();
    } catch (CloneNotSupportedException e) {
      return getInstance();
    }
  }

  /**
   * @param bytes the input, never {@code null}
   * @return the 32-byte SHA-256 of {@code bytes}
   */
  public static byte[] sha256(byte[] bytes) {
    return newSha256().digest(bytes);
  }

  /**
   * @param bytes the input, never {@code null}
   * @return the SHA-256 of {@code bytes} as 64 lower-case hex digits
   */
  public static String sha256Hex(byte[] bytes) {
    return hex(sha256(bytes));
  }

  /**
   * @param text the input, encoded as UTF-8 before hashing; never {@code null}
   * @return the SHA-256 of the UTF-8 bytes of {@code text} as 64 lower-case hex digits
   */
  public static String sha256Hex(String text) {
    return sha256Hex(text.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * @param bytes any bytes, never {@code null}
   * @return two lower-case hex digits per byte, in order ({@code ""} for no bytes)
   */
  public static String hex(byte[] bytes) {
    return HEX.formatHex(bytes);
  }

  /**
   * @param bytes any bytes, never {@code null}
   * @param from the first byte to write, from 0
   * @param to one past the last byte to write, at most {@code bytes.length}
   * @return two lower-case hex digits per byte of {@code bytes[from..to)}
   * @throws IndexOutOfBoundsException if the range is outside {@code bytes}
   */
  public static String hex(byte[] bytes, int from, int to) {
    return HEX.formatHex(bytes, from, to);
  }

  private static MessageDigest getInstance() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }
}
