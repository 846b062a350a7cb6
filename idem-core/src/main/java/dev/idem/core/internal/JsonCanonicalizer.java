package dev.idem.core.internal;

import dev.idem.core.InvalidPayloadException;

/**
 * Strict JSON parser (RFC 8259) and canonical serializer in one pass over UTF-8 bytes, without
 * dependencies: RFC 8785 (JSON Canonicalization Scheme, "JCS") except that numbers are written as
 * the exact decimal value they denote instead of the nearest IEEE-754 double. {@link JsonParser}
 * reads and validates, {@link CanonicalJsonWriter} writes strings and sorts members, {@link
 * JsonNumbers} writes numbers.
 *
 * <p>Not part of the public API. Stateless from the caller's point of view and safe to call from
 * any number of threads: every call works on its own buffers.
 *
 * <h2>What is accepted</h2>
 *
 * Exactly one JSON text per RFC 8259 §2, encoded as UTF-8 (§8.1), with optional insignificant
 * whitespace (space, tab, line feed, carriage return). A single leading UTF-8 byte order mark is
 * ignored, as §8.1 allows. Everything else is rejected with an {@link InvalidPayloadException}
 * whose message has the form {@code invalid JSON at byte N: <problem>}, where {@code N} is the
 * zero-based offset in the input where the problem was detected:
 *
 * <ul>
 *   <li>malformed UTF-8 (overlong forms, encoded surrogates, code points above U+10FFFF, truncated
 *       sequences), raw control characters inside strings, and bytes that start no JSON token;
 *   <li>trailing data after the value, empty input, unterminated strings, arrays and objects;
 *   <li>duplicate member names in one object (RFC 8785 §3.1, I-JSON RFC 7493 §2.3), compared after
 *       unescaping: which of two values a receiver keeps is undefined (RFC 8259 §4);
 *   <li>{@code \}{@code u} escapes that form a lone surrogate (RFC 8785 §3.1, RFC 7493 §2.1);
 *   <li>{@code NaN}, {@code Infinity}, leading zeros, {@code +1}, {@code .5}, {@code 1.}, {@code
 *       1e}, and nonzero numbers whose decimal exponent lies beyond ±{@value #MAX_EXPONENT} (see
 *       {@link JsonNumbers});
 *   <li>nesting deeper than {@value #MAX_DEPTH} arrays/objects (RFC 8259 §9 lets a parser limit
 *       depth; the parser is iterative, so depth never causes a {@link StackOverflowError}).
 * </ul>
 *
 * <h2>What is produced</h2>
 *
 * No whitespace; object members sorted by the UTF-16 code units of their names (RFC 8785 §3.2.3);
 * strings with only {@code \"}, {@code \\}, {@code \b}, {@code \f}, {@code \n}, {@code \r}, {@code
 * \t} and {@code \}{@code u00xx} (lowercase hex, other controls below U+0020) escaped and
 * everything else written as literal UTF-8 (§3.2.2.2), without Unicode normalisation; literals as
 * they are; numbers as their exact decimal value in the layout {@link JsonNumbers} describes, which
 * is RFC 8785's for every number a double holds exactly in its shortest form. Two inputs have the
 * same canonical form if and only if they denote the same JSON value.
 */
public final class JsonCanonicalizer {

  /** Deepest nesting of arrays and objects accepted. */
  public static final int MAX_DEPTH = 1000;

  /** The largest magnitude of a nonzero number's decimal exponent that is accepted. */
  public static final long MAX_EXPONENT = JsonNumbers.MAX_EXPONENT;

  private JsonCanonicalizer() {}

  /**
   * Parses {@code utf8Json} strictly and returns the UTF-8 bytes of its canonical form.
   *
   * @param utf8Json one JSON text in UTF-8, never {@code null}; not modified
   * @return a new array holding the canonical form
   * @throws NullPointerException if {@code utf8Json} is {@code null}
   * @throws InvalidPayloadException if the input is not valid UTF-8 JSON as described on the
   *     class; the message names the problem and its byte offset
   */
  public static byte[] canonicalize(byte[] utf8Json) {
    if (utf8Json == null) {
      throw new NullPointerException("utf8Json");
    }
    CanonicalJsonWriter out = new CanonicalJsonWriter(utf8Json.length);
    new JsonParser(utf8Json, out).run();
    return out.toByteArray();
  }

  /**
   * The canonical form of {@code utf8Json} without copying it: the input itself when it is already
   * canonical (checked in one pass that neither parses into a tree nor writes anything), otherwise
   * the buffer the general path wrote it into. The bytes are the same as those of {@link
   * #canonicalize(byte[])}; only fewer of them are copied.
   *
   * @param utf8Json one JSON text in UTF-8, never {@code null}; not modified
   * @return the canonical form, never {@code null}; its array may be {@code utf8Json} itself and is
   *     not to be modified
   * @throws NullPointerException if {@code utf8Json} is {@code null}
   * @throws InvalidPayloadException if the input is not valid UTF-8 JSON as described on the
   *     class; the message names the problem and its byte offset
   */
  public static Canonical canonicalForm(byte[] utf8Json) {
    if (utf8Json == null) {
      throw new NullPointerException("utf8Json");
    }
    if (CanonicalJsonCheck.isCanonical(utf8Json)) {
      return new Canonical(utf8Json, utf8Json.length);
    }
    CanonicalJsonWriter out = new CanonicalJsonWriter(utf8Json.length);
    new JsonParser(utf8Json, out).run();
    return new Canonical(out.buffer(), out.length());
  }

  /**
   * Whether {@code utf8Json} is valid JSON that {@link #canonicalize(byte[])} returns unchanged,
   * as far as the one-pass check recognises it: {@code true} is exact, {@code false} may also be
   * the answer for a canonical input with numbers in exponent notation, escapes in member names or
   * nesting deeper than 64 levels.
   *
   * @param utf8Json any bytes, never {@code null}; not modified
   * @return whether the bytes are recognised as canonical JSON; never throws for invalid input
   * @throws NullPointerException if {@code utf8Json} is {@code null}
   */
  public static boolean isCanonical(byte[] utf8Json) {
    if (utf8Json == null) {
      throw new NullPointerException("utf8Json");
    }
    return CanonicalJsonCheck.isCanonical(utf8Json);
  }

  /**
   * A canonical form: the first {@code length} bytes of {@code array}.
   *
   * @param array the bytes, never {@code null}; may be longer than {@code length}
   * @param length how many bytes of {@code array} the canonical form has
   */
  public record Canonical(byte[] array, int length) {}

  /** The exception for a problem detected at byte {@code offset} of the input. */
  static InvalidPayloadException invalid(int offset, String problem) {
    return new InvalidPayloadException("invalid JSON at byte " + offset + ": " + problem);
  }
}
