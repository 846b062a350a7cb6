package dev.idem.core;

import dev.idem.core.internal.JsonCanonicalizer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Objects;

/**
 * The SHA-256 digest of a request payload's canonical form: two requests that reuse an idempotency
 * key must carry the same fingerprint, or the second one is a different request.
 *
 * <p>For JSON payloads the digest covers the RFC 8785 (JSON Canonicalization Scheme) canonical form
 * of the RFC 8259 JSON text, so member order, insignificant whitespace, escape spelling and number
 * spelling ({@code 1.0} vs {@code 1} vs {@code 1e0}) do not change the fingerprint. For any other
 * payload it covers the raw bytes.
 *
 * <p>Instances are immutable and safe to share between threads. Two fingerprints are {@link
 * #equals(Object) equal} when their 32 digest bytes are equal.
 */
public final class Fingerprint {

  private static final int LENGTH = 32;
  private static final char[] HEX = "0123456789abcdef".toCharArray();
  private static final MessageDigest PROTOTYPE = newDigest();

  private final byte[] digest;

  /** Lazily computed; a benign race, as {@link String} is immutable. */
  private String hex;

  private Fingerprint(byte[] digest) {
    this.digest = digest;
  }

  /**
   * Fingerprints a JSON payload: SHA-256 over the RFC 8785 canonical form of the JSON text.
   *
   * <p>The input must be one RFC 8259 JSON text in UTF-8 (a leading byte order mark is ignored)
   * that RFC 8785 §3.1 accepts: no duplicate member names, no lone surrogates, no numbers outside
   * the IEEE-754 double range, nesting at most 1000 levels deep.
   *
   * @param utf8Json the payload, never {@code null}; not modified
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code utf8Json} is {@code null}
   * @throws InvalidPayloadException if {@code utf8Json} is not valid UTF-8 JSON as above; the
   *     message names the problem and its byte offset
   */
  public static Fingerprint ofJson(byte[] utf8Json) {
    Objects.requireNonNull(utf8Json, "utf8Json");
    return digest(JsonCanonicalizer.canonicalize(utf8Json));
  }

  /**
   * Fingerprints an opaque payload: SHA-256 over its bytes exactly as given.
   *
   * @param payload the payload, never {@code null} (use an empty array for no body); not modified
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code payload} is {@code null}
   */
  public static Fingerprint ofBytes(byte[] payload) {
    Objects.requireNonNull(payload, "payload");
    return digest(payload);
  }

  /**
   * Fingerprints a payload according to its media type: {@link #ofJson(byte[])} when {@link
   * #isJson(String)} holds for {@code mediaType}, {@link #ofBytes(byte[])} otherwise.
   *
   * @param mediaType the payload's media type, such as a {@code Content-Type} header value; may be
   *     {@code null} (treated as not JSON)
   * @param payload the payload, never {@code null}; not modified
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code payload} is {@code null}
   * @throws InvalidPayloadException if the media type is JSON but {@code payload} is not valid JSON
   *     (see {@link #ofJson(byte[])})
   */
  public static Fingerprint of(String mediaType, byte[] payload) {
    return isJson(mediaType) ? ofJson(payload) : ofBytes(payload);
  }

  /**
   * Tells whether a media type denotes JSON: {@code application/json} or any {@code type/subtype}
   * whose subtype ends with the {@code +json} structured syntax suffix (RFC 6839 §3.1), such as
   * {@code application/problem+json}. The comparison ignores case and any parameters after a {@code
   * ;} (RFC 9110 §8.3.1), e.g. {@code Application/JSON; charset=utf-8} is JSON.
   *
   * @param mediaType a media type or {@code Content-Type} value; may be {@code null}
   * @return {@code true} if it denotes JSON; {@code false} for {@code null} or anything else
   */
  public static boolean isJson(String mediaType) {
    if (mediaType == null) {
      return false;
    }
    int end = mediaType.indexOf(';');
    if (end < 0) {
      end = mediaType.length();
    }
    int start = 0;
    while (start < end && isHttpWhitespace(mediaType.charAt(start))) {
      start++;
    }
    while (end > start && isHttpWhitespace(mediaType.charAt(end - 1))) {
      end--;
    }
    int slash = mediaType.indexOf('/', start);
    if (slash <= start || slash >= end) {
      return false;
    }
    int length = end - start;
    if (length == 16 && mediaType.regionMatches(true, start, "application/json", 0, 16)) {
      return true;
    }
    // type "/" subtype, subtype = 1*char "+json"
    return end - slash - 1 > 5 && mediaType.regionMatches(true, end - 5, "+json", 0, 5);
  }

  /**
   * Parses a fingerprint from its {@link #hex()} form.
   *
   * @param hex64 exactly 64 hexadecimal digits, upper or lower case, never {@code null}
   * @return the fingerprint, never {@code null}
   * @throws NullPointerException if {@code hex64} is {@code null}
   * @throws IllegalArgumentException if {@code hex64} is not 64 hexadecimal digits
   */
  public static Fingerprint fromHex(String hex64) {
    Objects.requireNonNull(hex64, "hex64");
    if (hex64.length() != 2 * LENGTH) {
      throw new IllegalArgumentException(
          "a fingerprint is 64 hex digits, got " + hex64.length() + " characters");
    }
    byte[] bytes = new byte[LENGTH];
    for (int i = 0; i < 2 * LENGTH; i++) {
      int d = hexValue(hex64.charAt(i));
      if (d < 0) {
        throw new IllegalArgumentException(
            "a fingerprint is 64 hex digits, found a non-hex character at index " + i);
      }
      bytes[i >> 1] |= (byte) ((i & 1) == 0 ? d << 4 : d);
    }
    return new Fingerprint(bytes);
  }

  /**
   * The digest as 64 lowercase hexadecimal digits, the form stores persist.
   *
   * @return 64 characters {@code [0-9a-f]}, never {@code null}
   */
  public String hex() {
    String h = hex;
    if (h == null) {
      char[] chars = new char[2 * LENGTH];
      for (int i = 0; i < LENGTH; i++) {
        chars[2 * i] = HEX[(digest[i] >> 4) & 0xF];
        chars[2 * i + 1] = HEX[digest[i] & 0xF];
      }
      h = new String(chars);
      hex = h;
    }
    return h;
  }

  /**
   * The 32 digest bytes.
   *
   * @return a new copy on every call, never {@code null}; changing it does not affect this
   *     fingerprint
   */
  public byte[] bytes() {
    return digest.clone();
  }

  /**
   * Two fingerprints are equal when their digest bytes are equal.
   *
   * @param other any object, may be {@code null}
   * @return whether {@code other} is a fingerprint with the same digest
   */
  @Override
  public boolean equals(Object other) {
    return other instanceof Fingerprint && Arrays.equals(digest, ((Fingerprint) other).digest);
  }

  /**
   * A hash consistent with {@link #equals(Object)}.
   *
   * @return the first four digest bytes as an {@code int}
   */
  @Override
  public int hashCode() {
    return ((digest[0] & 0xFF) << 24)
        | ((digest[1] & 0xFF) << 16)
        | ((digest[2] & 0xFF) << 8)
        | (digest[3] & 0xFF);
  }

  /**
   * A debugging form, {@code Fingerprint[sha256=<64 lowercase hex digits>]}.
   *
   * @return the text, never {@code null}
   */
  @Override
  public String toString() {
    return "Fingerprint[sha256=" + hex() + "]";
  }

  private static Fingerprint digest(byte[] bytes) {
    return new Fingerprint(newInstance().digest(bytes));
  }

  private static MessageDigest newInstance() {
    try {
      return (MessageDigest) PROTOTYPE.clone();
    } catch (CloneNotSupportedException e) {
      return newDigest();
    }
  }

  private static MessageDigest newDigest() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  private static boolean isHttpWhitespace(char c) {
    return c == ' ' || c == '\t';
  }

  private static int hexValue(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }
}
