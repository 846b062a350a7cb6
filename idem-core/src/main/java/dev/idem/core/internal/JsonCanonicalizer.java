package dev.idem.core.internal;

import dev.idem.core.InvalidPayloadException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Strict JSON parser (RFC 8259) and canonical serializer (RFC 8785, JSON Canonicalization Scheme,
 * "JCS") in one pass over UTF-8 bytes, without dependencies.
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
 *       unescaping;
 *   <li>{@code \}{@code u} escapes that form a lone surrogate (RFC 8785 §3.1, RFC 7493 §2.1);
 *   <li>{@code NaN}, {@code Infinity}, leading zeros, {@code +1}, {@code .5}, {@code 1.}, {@code
 *       1e}, and numbers whose magnitude overflows an IEEE-754 double (RFC 8785 §3.2.2.3);
 *   <li>nesting deeper than {@value #MAX_DEPTH} arrays/objects (RFC 8259 §9 lets a parser limit
 *       depth; the parser is iterative, so depth never causes a {@link StackOverflowError}).
 * </ul>
 *
 * <h2>What is produced</h2>
 *
 * The RFC 8785 §3.2 canonical form: no whitespace; object members sorted by the UTF-16 code units
 * of their names (§3.2.3); strings with only {@code \"}, {@code \\}, {@code \b}, {@code \f}, {@code
 * \n}, {@code \r}, {@code \t} and {@code \}{@code u00xx} (lowercase hex, other controls below
 * U+0020) escaped and everything else written as literal UTF-8 (§3.2.2.2); numbers as the IEEE-754
 * double they denote, printed like ECMAScript {@code Number.prototype.toString} (shortest
 * round-trip digits, exponent form when the decimal exponent is at least 21 or at most -7, {@code
 * -0} as {@code 0}) (§3.2.2.3). Numbers that underflow to zero become {@code 0}, as the double
 * conversion dictates.
 *
 * <h2>How numbers are converted</h2>
 *
 * Integers of magnitude up to 2^53 without fraction or exponent are copied as they are. Other
 * numbers with at most 15 significant digits and a decimal exponent within ±307 are re-laid-out
 * from their own digits: such a decimal is the unique shortest representation of its nearest double
 * (DBL_DIG = 15), so no binary conversion is needed. Everything else is parsed with {@link
 * Double#parseDouble} (correctly rounded) and printed with the Schubfach shortest-digits algorithm;
 * subnormal doubles use an exact {@link BigDecimal} search. Java 17's {@link Double#toString} is
 * not used, as it does not always produce the shortest digits (JDK-4511638, fixed in JDK 19).
 */
public final class JsonCanonicalizer {

  /** Deepest nesting of arrays and objects accepted. */
  public static final int MAX_DEPTH = 1000;

  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  /** Bytes copied unchanged inside strings: ASCII from U+0020 except '"' and '\\'. */
  private static final boolean[] PLAIN = new boolean[256];

  private static final VarHandle LONG_BE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** 2^53: every integer of magnitude up to this is an exact double. */
  private static final long MAX_EXACT_INT = 1L << 53;

  /** Precision contexts for the shortest-digits search, indexed by precision. */
  private static final MathContext[] FLOOR = new MathContext[18];

  private static final MathContext[] CEILING = new MathContext[18];

  static {
    for (int b = 0x20; b < 0x80; b++) {
      PLAIN[b] = b != '"' && b != '\\';
    }
    for (int p = 1; p <= 17; p++) {
      FLOOR[p] = new MathContext(p, RoundingMode.FLOOR);
      CEILING[p] = new MathContext(p, RoundingMode.CEILING);
    }
  }

  private JsonCanonicalizer() {}

  /**
   * Parses {@code utf8Json} strictly and returns the UTF-8 bytes of its RFC 8785 canonical form.
   *
   * @param utf8Json one JSON text in UTF-8, never {@code null}; not modified
   * @return a new array holding the canonical form
   * @throws NullPointerException if {@code utf8Json} is {@code null}
   * @throws InvalidPayloadException if the input is not valid UTF-8 JSON acceptable to RFC 8785;
   *     the message names the problem and its byte offset
   */
  public static byte[] canonicalize(byte[] utf8Json) {
    if (utf8Json == null) {
      throw new NullPointerException("utf8Json");
    }
    Parser p = new Parser(utf8Json);
    p.run();
    return Arrays.copyOf(p.out, p.outPos);
  }

  // ---------------------------------------------------------------------------------------------

  private static final class Parser {
    private final byte[] in;
    private final int len;
    private int pos;

    byte[] out;
    int outPos;

    /** Per open container: true for an object. */
    private boolean[] isObject = new boolean[16];

    /** Per open container: index of its first member record (objects only). */
    private int[] memberBase = new int[16];

    private int depth;

    // Member records of all open objects, stack-allocated: an object owns [memberBase, mTop).
    // mKey is null for a name of printable ASCII without escapes: its canonical bytes in out,
    // which order like its UTF-16 code units, are compared instead.
    private String[] mKey = new String[16];
    private int[] mKeyOffset = new int[16];
    private int[] mStart = new int[16];
    private int[] mEnd = new int[16];
    private int[] mNameEnd = new int[16];

    /** For a plain name: its first 8 bytes, big-endian, zero-padded. */
    private long[] mPrefix = new long[16];

    private byte[] scratch = new byte[0];
    private int[] order = new int[16];
    private int mTop;

    /** Scratch for the significant digits of a number. */
    private final byte[] digits = new byte[32];

    Parser(byte[] in) {
      this.in = in;
      this.len = in.length;
      // Invariant: out has room for (len - pos) + 32 more bytes. Only numbers can expand.
      this.out = new byte[len + 64];
    }

    void run() {
      if (len >= 3 && in[0] == (byte) 0xEF && in[1] == (byte) 0xBB && in[2] == (byte) 0xBF) {
        pos = 3; // RFC 8259 §8.1: a parser MAY ignore a byte order mark
      }
      skipWhitespace();
      if (pos >= len) {
        throw error(pos, "expected a JSON value but found end of input");
      }
      value:
      while (true) {
        // ---- parse one value at pos (whitespace already skipped, pos < len not guaranteed)
        if (pos >= len) {
          throw error(pos, "unexpected end of input, expected a value");
        }
        byte b = in[pos];
        switch (b) {
          case '{':
            push(true);
            out[outPos++] = '{';
            pos++;
            skipWhitespace();
            if (pos < len && in[pos] == '}') {
              pos++;
              out[outPos++] = '}';
              pop();
              break; // value complete
            }
            beginMember();
            continue value;
          case '[':
            push(false);
            out[outPos++] = '[';
            pos++;
            skipWhitespace();
            if (pos < len && in[pos] == ']') {
              pos++;
              out[outPos++] = ']';
              pop();
              break;
            }
            continue value;
          case '"':
            parseString(false);
            break;
          case 't':
            literal("true");
            break;
          case 'f':
            literal("false");
            break;
          case 'n':
            literal("null");
            break;
          default:
            if (b == '-' || (b >= '0' && b <= '9')) {
              parseNumber();
            } else if (b == 'N' || b == 'I') {
              throw error(pos, "NaN and Infinity are not valid JSON numbers");
            } else {
              throw error(pos, "expected a value but found " + describe(pos));
            }
        }
        // ---- a value is complete: close containers or move to the next element
        while (true) {
          skipWhitespace();
          if (depth == 0) {
            if (pos < len) {
              throw error(pos, "unexpected data after the JSON value: " + describe(pos));
            }
            return;
          }
          if (isObject[depth - 1]) {
            mEnd[mTop - 1] = outPos;
            if (pos >= len) {
              throw error(pos, "unexpected end of input, expected ',' or '}'");
            }
            byte c = in[pos];
            if (c == ',') {
              pos++;
              out[outPos++] = ',';
              skipWhitespace();
              beginMember();
              continue value;
            } else if (c == '}') {
              pos++;
              finishObject();
              out[outPos++] = '}';
              pop();
            } else {
              throw error(pos, "expected ',' or '}' but found " + describe(pos));
            }
          } else {
            if (pos >= len) {
              throw error(pos, "unexpected end of input, expected ',' or ']'");
            }
            byte c = in[pos];
            if (c == ',') {
              pos++;
              out[outPos++] = ',';
              skipWhitespace();
              continue value;
            } else if (c == ']') {
              pos++;
              out[outPos++] = ']';
              pop();
            } else {
              throw error(pos, "expected ',' or ']' but found " + describe(pos));
            }
          }
        }
      }
    }

    private void push(boolean object) {
      if (depth >= MAX_DEPTH) {
        throw error(pos, "nesting deeper than " + MAX_DEPTH + " levels");
      }
      if (depth == isObject.length) {
        isObject = Arrays.copyOf(isObject, depth * 2);
        memberBase = Arrays.copyOf(memberBase, depth * 2);
      }
      isObject[depth] = object;
      memberBase[depth] = mTop;
      depth++;
    }

    private void pop() {
      depth--;
      mTop = memberBase[depth];
    }

    /** At a member name (whitespace skipped): parses {@code "name" :} and records the member. */
    private void beginMember() {
      if (pos >= len) {
        throw error(pos, "unexpected end of input, expected a member name");
      }
      if (in[pos] != '"') {
        throw error(pos, "expected a member name string but found " + describe(pos));
      }
      if (mTop == mKey.length) {
        int n = mTop * 2;
        mKey = Arrays.copyOf(mKey, n);
        mKeyOffset = Arrays.copyOf(mKeyOffset, n);
        mStart = Arrays.copyOf(mStart, n);
        mEnd = Arrays.copyOf(mEnd, n);
        mNameEnd = Arrays.copyOf(mNameEnd, n);
        mPrefix = Arrays.copyOf(mPrefix, n);
      }
      int m = mTop++;
      mKeyOffset[m] = pos;
      mStart[m] = outPos;
      String name = parseString(true);
      mKey[m] = name;
      mNameEnd[m] = outPos;
      if (name == null) {
        // out always has 32 spare bytes, so reading 8 from the name's start stays in bounds
        int nameLen = outPos - mStart[m] - 2;
        long prefix = (long) LONG_BE.get(out, mStart[m] + 1);
        mPrefix[m] =
            nameLen >= 8 ? prefix : nameLen == 0 ? 0 : prefix & (-1L << ((8 - nameLen) << 3));
      }
      skipWhitespace();
      if (pos >= len) {
        throw error(pos, "unexpected end of input, expected ':'");
      }
      if (in[pos] != ':') {
        throw error(pos, "expected ':' but found " + describe(pos));
      }
      pos++;
      out[outPos++] = ':';
      skipWhitespace();
    }

    /** Sorts the members of the innermost object (RFC 8785 §3.2.3) and rejects duplicates. */
    private void finishObject() {
      int base = memberBase[depth - 1];
      int n = mTop - base;
      if (n < 2) {
        return;
      }
      boolean sorted = true;
      for (int i = base + 1; i < mTop; i++) {
        int c = compareNames(i - 1, i);
        if (c == 0) {
          throw duplicate(i);
        }
        if (c > 0) {
          sorted = false;
          break;
        }
      }
      if (sorted) {
        return;
      }
      if (order.length < n) {
        order = new int[Math.max(n, 2 * order.length)];
      }
      int[] order = this.order;
      for (int i = 0; i < n; i++) {
        order[i] = base + i;
      }
      if (n <= 16) {
        for (int i = 1; i < n; i++) {
          int x = order[i];
          int j = i - 1;
          while (j >= 0 && compareNames(order[j], x) > 0) {
            order[j + 1] = order[j];
            j--;
          }
          order[j + 1] = x;
        }
      } else {
        Integer[] boxed = new Integer[n];
        for (int i = 0; i < n; i++) {
          boxed[i] = order[i];
        }
        Arrays.sort(boxed, this::compareNames);
        for (int i = 0; i < n; i++) {
          order[i] = boxed[i];
        }
      }
      for (int i = 1; i < n; i++) {
        if (compareNames(order[i - 1], order[i]) == 0) {
          throw duplicate(Math.max(order[i - 1], order[i]));
        }
      }
      int regionStart = mStart[base];
      int regionLen = outPos - regionStart;
      if (scratch.length < regionLen) {
        scratch = new byte[Math.max(regionLen, 2 * scratch.length)];
      }
      byte[] copy = scratch;
      System.arraycopy(out, regionStart, copy, 0, regionLen);
      int w = regionStart;
      for (int i = 0; i < n; i++) {
        int m = order[i];
        if (i > 0) {
          out[w++] = ',';
        }
        int segLen = mEnd[m] - mStart[m];
        System.arraycopy(copy, mStart[m] - regionStart, out, w, segLen);
        w += segLen;
      }
      // w == outPos: the same bytes, reordered
    }

    /**
     * Orders two member names by their UTF-16 code units (RFC 8785 §3.2.3). Names of printable
     * ASCII compare as their canonical bytes, which order the same way.
     */
    private int compareNames(int a, int b) {
      if (mKey[a] == null && mKey[b] == null) {
        long pa = mPrefix[a];
        long pb = mPrefix[b];
        if (pa != pb) {
          return pa < pb ? -1 : 1; // bytes below 0x80: signed order is byte order
        }
        // equal first 8 bytes (a name shorter than 8 pads with 0, which no plain byte is)
        int fromA = mStart[a] + 1;
        int fromB = mStart[b] + 1;
        int lenA = mNameEnd[a] - 1 - fromA;
        int lenB = mNameEnd[b] - 1 - fromB;
        int common = Math.min(lenA, lenB);
        byte[] out = this.out;
        for (int i = 8; i < common; i++) {
          int d = out[fromA + i] - out[fromB + i];
          if (d != 0) {
            return d;
          }
        }
        return lenA - lenB;
      }
      return name(a).compareTo(name(b)); // String.compareTo orders by UTF-16 code units
    }

    private String name(int m) {
      String s = mKey[m];
      if (s == null) {
        s =
            new String(
                out, mStart[m] + 1, mNameEnd[m] - mStart[m] - 2, StandardCharsets.ISO_8859_1);
        mKey[m] = s;
      }
      return s;
    }

    private InvalidPayloadException duplicate(int member) {
      return error(mKeyOffset[member], "duplicate member name " + quoteForMessage(name(member)));
    }

    private void literal(String word) {
      int n = word.length();
      if (pos + n > len) {
        throw error(pos, "invalid literal, expected '" + word + "'");
      }
      for (int i = 0; i < n; i++) {
        if (in[pos + i] != word.charAt(i)) {
          throw error(pos, "invalid literal, expected '" + word + "'");
        }
      }
      for (int i = 0; i < n; i++) {
        out[outPos++] = (byte) word.charAt(i);
      }
      pos += n;
    }

    private void skipWhitespace() {
      while (pos < len) {
        byte b = in[pos];
        if (b == ' ' || b == '\n' || b == '\r' || b == '\t') {
          pos++;
        } else {
          return;
        }
      }
    }

    // ---- strings -------------------------------------------------------------------------------

    /**
     * At an opening quote: validates the string and writes its canonical form (RFC 8785 §3.2.2.2).
     * For a member name with escapes or non-ASCII characters, returns the decoded value; otherwise
     * {@code null}.
     */
    private String parseString(boolean wantValue) {
      final byte[] in = this.in;
      final byte[] out = this.out;
      final int start = pos;
      int p = pos + 1;
      int o = outPos;
      out[o++] = '"';
      boolean plain = true; // ASCII only, no escapes
      while (true) {
        int run = p;
        while (p < len && PLAIN[in[p] & 0xFF]) {
          p++;
        }
        if (p > run) {
          System.arraycopy(in, run, out, o, p - run);
          o += p - run;
        }
        if (p >= len) {
          throw error(p, "unterminated string starting at byte " + start);
        }
        int b = in[p];
        if (b == '"') {
          p++;
          break;
        }
        if (b == '\\') {
          plain = false;
          p = escape(p, o);
          o = escapedOutPos;
          continue;
        }
        if (b >= 0) {
          throw error(p, String.format("unescaped control character 0x%02x in string", b));
        }
        plain = false;
        int n = utf8Length(p);
        for (int i = 0; i < n; i++) {
          out[o++] = in[p + i];
        }
        p += n;
      }
      out[o++] = '"';
      pos = p;
      outPos = o;
      if (!wantValue || plain) {
        return null; // a plain member name is compared as bytes in out
      }
      return decode(start + 1, p - 1);
    }

    private int escapedOutPos;

    /** Handles the escape at {@code p}, writing canonical output at {@code o}. */
    private int escape(int p, int o) {
      final byte[] out = this.out;
      if (p + 1 >= len) {
        throw error(p, "unterminated escape sequence");
      }
      byte e = in[p + 1];
      int next = p + 2;
      int cp;
      switch (e) {
        case '"':
        case '\\':
          out[o++] = '\\';
          out[o++] = e;
          escapedOutPos = o;
          return next;
        case '/':
          out[o++] = '/';
          escapedOutPos = o;
          return next;
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          out[o++] = '\\';
          out[o++] = e;
          escapedOutPos = o;
          return next;
        case 'u':
          cp = hex4(p);
          next = p + 6;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (next + 1 < len && in[next] == '\\' && in[next + 1] == 'u') {
              int lo = hex4(next);
              if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = Character.toCodePoint((char) cp, (char) lo);
                next += 6;
              } else {
                throw error(p, String.format("lone surrogate \\u%04x", cp));
              }
            } else {
              throw error(p, String.format("lone surrogate \\u%04x", cp));
            }
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            throw error(p, String.format("lone surrogate \\u%04x", cp));
          }
          break;
        default:
          throw error(p, "invalid escape sequence " + describe(p + 1) + " after '\\'");
      }
      // a \\u escape: write the code point canonically
      if (cp < 0x80) {
        if (cp < 0x20) {
          out[o++] = '\\';
          switch (cp) {
            case '\b':
              out[o++] = 'b';
              break;
            case '\f':
              out[o++] = 'f';
              break;
            case '\n':
              out[o++] = 'n';
              break;
            case '\r':
              out[o++] = 'r';
              break;
            case '\t':
              out[o++] = 't';
              break;
            default:
              out[o++] = 'u';
              out[o++] = '0';
              out[o++] = '0';
              out[o++] = HEX[cp >> 4];
              out[o++] = HEX[cp & 0xF];
          }
        } else if (cp == '"' || cp == '\\') {
          out[o++] = '\\';
          out[o++] = (byte) cp;
        } else {
          out[o++] = (byte) cp;
        }
      } else if (cp < 0x800) {
        out[o++] = (byte) (0xC0 | (cp >> 6));
        out[o++] = (byte) (0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out[o++] = (byte) (0xE0 | (cp >> 12));
        out[o++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
        out[o++] = (byte) (0x80 | (cp & 0x3F));
      } else {
        out[o++] = (byte) (0xF0 | (cp >> 18));
        out[o++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
        out[o++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
        out[o++] = (byte) (0x80 | (cp & 0x3F));
      }
      escapedOutPos = o;
      return next;
    }

    /** Reads the four hex digits of the {@code \}{@code u} escape starting at {@code p}. */
    private int hex4(int p) {
      if (p + 6 > len) {
        throw error(p, "truncated \\u escape");
      }
      int v = 0;
      for (int i = p + 2; i < p + 6; i++) {
        int c = in[i];
        int d;
        if (c >= '0' && c <= '9') {
          d = c - '0';
        } else if (c >= 'a' && c <= 'f') {
          d = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
          d = c - 'A' + 10;
        } else {
          throw error(i, "invalid hex digit " + describe(i) + " in \\u escape");
        }
        v = (v << 4) | d;
      }
      return v;
    }

    /**
     * Validates the multi-byte UTF-8 sequence at {@code p} (Unicode 15 table 3-7: no overlongs, no
     * surrogates, nothing above U+10FFFF) and returns its length.
     */
    private int utf8Length(int p) {
      int b0 = in[p] & 0xFF;
      int n;
      int lo = 0x80;
      int hi = 0xBF;
      if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
      } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        if (b0 == 0xE0) {
          lo = 0xA0;
        } else if (b0 == 0xED) {
          hi = 0x9F;
        }
      } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        if (b0 == 0xF0) {
          lo = 0x90;
        } else if (b0 == 0xF4) {
          hi = 0x8F;
        }
      } else {
        throw error(p, String.format("invalid UTF-8 lead byte 0x%02x", b0));
      }
      if (p + n > len) {
        throw error(p, "truncated UTF-8 sequence");
      }
      int b1 = in[p + 1] & 0xFF;
      if (b1 < lo || b1 > hi) {
        throw error(p, "invalid UTF-8 sequence");
      }
      for (int i = 2; i < n; i++) {
        int c = in[p + i] & 0xFF;
        if (c < 0x80 || c > 0xBF) {
          throw error(p, "invalid UTF-8 sequence");
        }
      }
      return n;
    }

    /** Decodes an already validated string body (between the quotes) into a Java string. */
    private String decode(int from, int to) {
      StringBuilder sb = new StringBuilder(to - from);
      int p = from;
      while (p < to) {
        int runStart = p;
        while (p < to && in[p] != '\\') {
          p++;
        }
        if (p > runStart) {
          sb.append(new String(in, runStart, p - runStart, StandardCharsets.UTF_8));
        }
        if (p >= to) {
          break;
        }
        byte e = in[p + 1];
        switch (e) {
          case 'b':
            sb.append('\b');
            break;
          case 'f':
            sb.append('\f');
            break;
          case 'n':
            sb.append('\n');
            break;
          case 'r':
            sb.append('\r');
            break;
          case 't':
            sb.append('\t');
            break;
          case 'u':
            sb.append((char) hex4(p));
            p += 4;
            break;
          default: // '"', '\\', '/'
            sb.append((char) e);
        }
        p += 2;
      }
      return sb.toString();
    }

    // ---- numbers -------------------------------------------------------------------------------

    /**
     * At '-' or a digit: validates the number (RFC 8259 §6) and writes it per RFC 8785 §3.2.2.3.
     */
    private void parseNumber() {
      final byte[] in = this.in;
      final int start = pos;
      int p = pos;
      boolean negative = false;
      if (in[p] == '-') {
        negative = true;
        p++;
        if (p >= len) {
          throw error(p, "expected a digit after '-' but found end of input");
        }
      }
      int intStart = p;
      byte c = in[p];
      if (c == '0') {
        p++;
        if (p < len && in[p] >= '0' && in[p] <= '9') {
          throw error(intStart, "leading zeros are not allowed in numbers");
        }
      } else if (c >= '1' && c <= '9') {
        p++;
        while (p < len && in[p] >= '0' && in[p] <= '9') {
          p++;
        }
      } else if (c == 'I' || c == 'N') {
        throw error(p, "NaN and Infinity are not valid JSON numbers");
      } else {
        throw error(p, "expected a digit after '-' but found " + describe(p));
      }
      int intEnd = p;
      int fracStart = p;
      int fracEnd = p;
      boolean hasExp = false;
      long exp = 0;
      if (p < len && in[p] == '.') {
        p++;
        fracStart = p;
        if (p >= len || in[p] < '0' || in[p] > '9') {
          throw error(p, "expected a digit after the decimal point but found " + describe(p));
        }
        while (p < len && in[p] >= '0' && in[p] <= '9') {
          p++;
        }
        fracEnd = p;
      }
      if (p < len && (in[p] == 'e' || in[p] == 'E')) {
        hasExp = true;
        p++;
        boolean expNegative = false;
        if (p < len && (in[p] == '+' || in[p] == '-')) {
          expNegative = in[p] == '-';
          p++;
        }
        if (p >= len || in[p] < '0' || in[p] > '9') {
          throw error(p, "expected a digit in the exponent but found " + describe(p));
        }
        while (p < len && in[p] >= '0' && in[p] <= '9') {
          if (exp < 1_000_000_000L) {
            exp = exp * 10 + (in[p] - '0');
          }
          p++;
        }
        if (expNegative) {
          exp = -exp;
        }
      }
      pos = p;

      // Fast path: a plain integer that is exactly a double prints as itself.
      int intDigits = intEnd - intStart;
      if (!hasExp && fracStart == fracEnd && intDigits <= 16) {
        if (intDigits < 16 || parseLong(intStart, intEnd) <= MAX_EXACT_INT) {
          byte[] out = this.out;
          int o = outPos;
          if (intDigits == 1 && in[intStart] == '0') {
            out[o++] = '0'; // -0 is 0
          } else {
            for (int i = start; i < p; i++) {
              out[o++] = in[i];
            }
          }
          outPos = o;
          return;
        }
      }

      // Significant digits of the mantissa: value = 0.d1d2..dk * 10^n
      int k = 0;
      int totalSig = 0;
      long n = (long) intDigits + exp;
      boolean leading = true;
      int lastNonZero = 0;
      for (int i = intStart; i < fracEnd; i++) {
        if (i == intEnd) {
          i = fracStart;
          if (i >= fracEnd) {
            break;
          }
        }
        byte d = in[i];
        if (leading) {
          if (d == '0') {
            n--;
            continue;
          }
          leading = false;
        }
        totalSig++;
        if (k < digits.length) {
          digits[k++] = d;
        }
        if (d != '0') {
          lastNonZero = totalSig;
        }
      }
      if (leading) { // all digits zero: 0, -0, 0.000, 0e5 ...
        out[outPos++] = '0';
        return;
      }
      // Up to 15 significant digits in the normal range: the decimal is the unique shortest
      // representation of its nearest double (DBL_DIG = 15), so print the input digits.
      if (lastNonZero <= 15 && n - 1 >= -307 && n - 1 <= 307) {
        writeEs(negative, digits, lastNonZero, (int) n);
        ensureRoom();
        return;
      }
      double v = Double.parseDouble(new String(in, start, p - start, StandardCharsets.ISO_8859_1));
      if (Double.isInfinite(v)) {
        throw error(start, "number out of range of an IEEE-754 double");
      }
      writeDouble(v);
      ensureRoom();
    }

    private long parseLong(int from, int to) {
      long v = 0;
      for (int i = from; i < to; i++) {
        v = v * 10 + (in[i] - '0');
      }
      return v;
    }

    private void ensureRoom() {
      int need = outPos + (len - pos) + 64;
      if (need > out.length) {
        out = Arrays.copyOf(out, Math.max(need, out.length + (out.length >> 1)));
      }
    }

    /** Writes a finite double like ECMAScript Number.prototype.toString (RFC 8785 §3.2.2.3). */
    private void writeDouble(double v) {
      if (v == 0) {
        out[outPos++] = '0';
        return;
      }
      double a = Math.abs(v);
      long f;
      int e;
      if (a >= Double.MIN_NORMAL) {
        f = Schubfach.significand(a);
        e = Schubfach.exponent(a);
      } else { // subnormal: rare, exact arithmetic
        BigDecimal shortest = shortest(a);
        f = shortest.unscaledValue().longValueExact();
        e = -shortest.scale();
      }
      while (f % 10 == 0) {
        f /= 10;
        e++;
      }
      int k = 0;
      for (long x = f; x != 0; x /= 10) {
        k++;
      }
      for (int i = k - 1; i >= 0; i--) {
        digits[i] = (byte) ('0' + f % 10);
        f /= 10;
      }
      writeEs(v < 0, digits, k, k + e);
    }

    /**
     * ECMAScript Number::toString steps for value = s * 10^(n-k), s = the k digits in {@code d}
     * without leading or trailing zeros.
     */
    private void writeEs(boolean negative, byte[] d, int k, int n) {
      byte[] out = this.out;
      int o = outPos;
      if (negative) {
        out[o++] = '-';
      }
      if (k <= n && n <= 21) {
        for (int i = 0; i < k; i++) {
          out[o++] = d[i];
        }
        for (int i = k; i < n; i++) {
          out[o++] = '0';
        }
      } else if (0 < n && n <= 21) {
        for (int i = 0; i < n; i++) {
          out[o++] = d[i];
        }
        out[o++] = '.';
        for (int i = n; i < k; i++) {
          out[o++] = d[i];
        }
      } else if (-6 < n && n <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = n; i < 0; i++) {
          out[o++] = '0';
        }
        for (int i = 0; i < k; i++) {
          out[o++] = d[i];
        }
      } else {
        out[o++] = d[0];
        if (k > 1) {
          out[o++] = '.';
          for (int i = 1; i < k; i++) {
            out[o++] = d[i];
          }
        }
        out[o++] = 'e';
        int e = n - 1;
        if (e < 0) {
          out[o++] = '-';
          e = -e;
        } else {
          out[o++] = '+';
        }
        if (e >= 100) {
          out[o++] = (byte) ('0' + e / 100);
        }
        if (e >= 10) {
          out[o++] = (byte) ('0' + (e / 10) % 10);
        }
        out[o++] = (byte) ('0' + e % 10);
      }
      outPos = o;
    }

    private InvalidPayloadException error(int offset, String problem) {
      return new InvalidPayloadException("invalid JSON at byte " + offset + ": " + problem);
    }

    private String describe(int p) {
      if (p >= len) {
        return "end of input";
      }
      int b = in[p] & 0xFF;
      if (b > 0x20 && b < 0x7F) {
        return "'" + (char) b + "'";
      }
      return String.format("byte 0x%02x", b);
    }
  }

  /**
   * Shortest round-trip digits of a positive normal double without big-number arithmetic: the
   * Schubfach algorithm (R. Giulietti, "The Schubfach way to render doubles", 2020), which picks,
   * among the decimals of fewest digits inside the rounding interval, the one closest to the
   * double, and the even one on a tie. For normal doubles that is exactly ECMAScript's choice.
   */
  static final class Schubfach {
    private static final int K_MIN = -324;
    private static final int K_MAX = 292;
    private static final long MASK_63 = (1L << 63) - 1;
    private static final long C_MIN = 1L << 52;

    private Schubfach() {}

    /**
     * The significand f of the result f * 10^e, possibly with trailing zeros; e is {@link
     * #exponent(double)}.
     */
    static long significand(double a) {
      long bits = Double.doubleToRawLongBits(a);
      int bq = (int) (bits >>> 52) & 0x7FF;
      long c = C_MIN | (bits & (C_MIN - 1));
      int q = bq - 1075; // a = c * 2^q, 2^52 <= c < 2^53
      if (-52 <= q && q < 0) {
        long f = c >> -q;
        if (f << -q == c) { // an integer below 2^53 is its own shortest decimal
          return f;
        }
      }
      int out = (int) c & 1; // the rounding interval is open when c is odd
      long cb = c << 2;
      long cbr = cb + 2;
      long cbl;
      int k;
      if (c != C_MIN || bq == 1) {
        cbl = cb - 2;
        k = flog10pow2(q);
      } else { // the lower neighbour is half as far away
        cbl = cb - 1;
        k = flog10ThreeQuartersPow2(q);
      }
      int h = q + flog2pow10(-k) + 2;
      long g1 = Table.G[2 * (k - K_MIN)];
      long g0 = Table.G[2 * (k - K_MIN) + 1];
      // 4 * a * 10^-k and the ends of the rounding interval, scaled alike, rounded to odd
      long vb = rop(g1, g0, cb << h);
      long vbl = rop(g1, g0, cbl << h);
      long vbr = rop(g1, g0, cbr << h);

      long s = vb >> 2; // floor(a * 10^-k)
      long sp10 = s / 10 * 10;
      long tp10 = sp10 + 10;
      boolean upIn = vbl + out <= sp10 << 2;
      boolean wpIn = (tp10 << 2) + out <= vbr;
      if (upIn != wpIn) { // exactly one decimal with one digit fewer fits
        return upIn ? sp10 : tp10;
      }
      long t = s + 1;
      boolean uIn = vbl + out <= s << 2;
      boolean wIn = (t << 2) + out <= vbr;
      if (uIn != wIn) {
        return uIn ? s : t;
      }
      long cmp = vb - ((s + t) << 1); // both fit: the closer, or the even one on a tie
      return cmp < 0 || (cmp == 0 && (s & 1) == 0) ? s : t;
    }

    /** The exponent e of the result f * 10^e, f = {@link #significand(double)}. */
    static int exponent(double a) {
      long bits = Double.doubleToRawLongBits(a);
      int bq = (int) (bits >>> 52) & 0x7FF;
      long c = C_MIN | (bits & (C_MIN - 1));
      int q = bq - 1075;
      if (-52 <= q && q < 0 && (c >> -q) << -q == c) {
        return 0;
      }
      return c != C_MIN || bq == 1 ? flog10pow2(q) : flog10ThreeQuartersPow2(q);
    }

    /** floor(g * cp / 2^127), with the lowest bit set when inexact ("round to odd"). */
    private static long rop(long g1, long g0, long cp) {
      long x1 = Math.multiplyHigh(g0, cp);
      long y0 = g1 * cp;
      long y1 = Math.multiplyHigh(g1, cp);
      long z = (y0 >>> 1) + x1;
      long vbp = y1 + (z >>> 63);
      return vbp | (((z & MASK_63) + MASK_63) >>> 63);
    }

    /** floor(q * log10(2)) for |q| <= 5456721. */
    static int flog10pow2(int q) {
      return (int) ((q * 661_971_961_083L) >> 41);
    }

    /** floor(log10(3/4 * 2^q)) for |q| <= 5456721. */
    static int flog10ThreeQuartersPow2(int q) {
      return (int) ((q * 661_971_961_083L - 274_743_187_321L) >> 41);
    }

    /** floor(e * log2(10)) for |e| <= 1838394. */
    static int flog2pow10(int e) {
      return (int) ((e * 913_124_641_741L) >> 38);
    }

    /**
     * For each k, g = floor(10^-k * 2^-r) + 1 split into 63-bit halves g1, g0, where r =
     * flog2pow10(-k) - 125 puts the product in [2^125, 2^126). Computed once, on first use.
     */
    private static final class Table {
      static final long[] G = new long[2 * (K_MAX - K_MIN + 1)];

      static {
        for (int k = K_MIN; k <= K_MAX; k++) {
          int e = -k;
          int r = flog2pow10(e) - 125;
          BigInteger beta;
          if (e >= 0) {
            BigInteger p = BigInteger.TEN.pow(e);
            beta = r <= 0 ? p.shiftLeft(-r) : p.shiftRight(r);
          } else {
            beta = BigInteger.ONE.shiftLeft(-r).divide(BigInteger.TEN.pow(-e));
          }
          BigInteger g = beta.add(BigInteger.ONE);
          if (g.bitLength() != 126) {
            throw new AssertionError("g out of range for k=" + k);
          }
          G[2 * (k - K_MIN)] = g.shiftRight(63).longValueExact();
          G[2 * (k - K_MIN) + 1] = g.longValue() & MASK_63;
        }
      }
    }
  }

  /**
   * The shortest decimal that rounds to {@code a} (positive, finite), choosing the one closest to
   * {@code a} when several have that length, and the even one on a tie (ECMAScript Number::toString
   * step 5). Never returns more than 17 significant digits.
   *
   * <p>Exact but slow (big-number arithmetic, up to 34 conversions back to double); used for
   * subnormal doubles, where {@link Schubfach} does not apply as written.
   */
  static BigDecimal shortest(double a) {
    BigDecimal exact = new BigDecimal(a);
    // The nearest p-digit decimals below and above the exact value: if any p-digit decimal
    // rounds to a, one of these two does.
    for (int p = 1; p < 17; p++) {
      BigDecimal c = candidate(exact, a, p);
      if (c != null) {
        return c;
      }
    }
    BigDecimal c = candidate(exact, a, 17);
    if (c == null) {
      throw new AssertionError("17 digits always round-trip: " + a);
    }
    return c;
  }

  private static BigDecimal candidate(BigDecimal exact, double a, int p) {
    BigDecimal lo = exact.round(FLOOR[p]);
    BigDecimal hi = exact.round(CEILING[p]);
    boolean loOk = lo.doubleValue() == a;
    boolean hiOk = hi.doubleValue() == a;
    if (loOk && hiOk) {
      int c = exact.subtract(lo).compareTo(hi.subtract(exact));
      if (c < 0) {
        return lo;
      } else if (c > 0) {
        return hi;
      }
      return lo.unscaledValue().testBit(0) ? hi : lo;
    }
    if (loOk) {
      return lo;
    }
    if (hiOk) {
      return hi;
    }
    return null;
  }

  private static String quoteForMessage(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    int max = Math.min(s.length(), 64);
    for (int i = 0; i < max; i++) {
      char ch = s.charAt(i);
      if (ch < 0x20 || ch == '"' || ch == '\\' || ch > 0x7E) {
        sb.append(String.format("\\u%04x", (int) ch));
      } else {
        sb.append(ch);
      }
    }
    if (s.length() > max) {
      sb.append("...");
    }
    return sb.append('"').toString();
  }
}
