package dev.idem.core.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The fast path of {@link JsonCanonicalizer}: one pass over UTF-8 bytes that tells whether they
 * are already a valid JSON text in canonical form, so that they can be digested as they are
 * instead of being rewritten into the same bytes.
 *
 * <p>The check is conservative: {@code true} means that {@link JsonCanonicalizer#canonicalize}
 * would accept the input and return exactly the same bytes. {@code false} means only "take the
 * general path", which rewrites the input or reports why it is invalid; it is also the answer for
 * canonical inputs outside the cases recognised here (numbers in exponent notation, member names
 * with escapes, nesting deeper than {@value #MAX_DEPTH}).
 *
 * <p>Recognised as canonical: no byte order mark and no whitespace outside strings; {@code true},
 * {@code false}, {@code null}; numbers that are {@code 0} or a nonzero integer of at most 21
 * digits, or a decimal with a nonzero last digit whose integer part has at most 21 digits or is
 * {@code 0} followed by at most 5 zeros after the point (with an optional {@code -} before a
 * nonzero number); strings of well-formed UTF-8 in which only {@code "} and {@code \}, with {@code
 * \b}, {@code \f}, {@code \n}, {@code \r}, {@code \t}, and the other controls below U+0020 as
 * {@code \}{@code u00xx} with lowercase hex are escaped; objects whose member names strictly
 * increase by UTF-16 code units (which also rules out duplicates).
 *
 * <p>Not part of the public API. Stateless; safe to call from any number of threads.
 */
final class CanonicalJsonCheck {

  /** Deepest nesting the check follows; deeper inputs take the general path. */
  static final int MAX_DEPTH = 64;

  /** Longest integer part written without an exponent (see {@link JsonNumbers}). */
  private static final int PLAIN_DIGITS = 21;

  /** Most zeros between {@code 0.} and the first significant digit without an exponent. */
  private static final int MAX_LEADING_FRACTION_ZEROS = 5;

  /** Bytes that stand for themselves inside a canonical string: ASCII from U+0020 but {@code "\}. */
  private static final boolean[] PLAIN = new boolean[256];

  /**
   * For each byte after {@code \}{@code u00} + one hex digit: the controls below U+0020 that have
   * no short escape, as {@code \}{@code u00xx} with lowercase hex.
   */
  private static final boolean[] SHORT_ESCAPE = new boolean[256];

  static {
    for (int b = 0x20; b < 0x80; b++) {
      PLAIN[b] = b != '"' && b != '\\';
    }
    for (char c : new char[] {'"', '\\', 'b', 'f', 'n', 'r', 't'}) {
      SHORT_ESCAPE[c] = true;
    }
  }

  private static final VarHandle LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private static final long ONES = 0x0101010101010101L;
  private static final long HIGH = 0x8080808080808080L;

  private CanonicalJsonCheck() {}

  /**
   * Reads eight bytes at once (SWAR): nonzero if any of them might not stand for itself in a
   * string (a byte below 0x20 or from 0x80, {@code "} or {@code \}), zero only if none does. A
   * nonzero answer may be a false alarm after a matching byte, never a miss.
   *
   * @param x eight bytes
   * @return zero if all eight bytes are {@link #PLAIN}
   */
  static long notPlain(long x) {
    long control = (x - 0x20 * ONES) & ~x; // a byte below 0x20 (or from 0x80)
    long quote = x ^ ('"' * ONES);
    long backslash = x ^ ('\\' * ONES);
    long zeroQuote = (quote - ONES) & ~quote;
    long zeroBackslash = (backslash - ONES) & ~backslash;
    return (x | control | zeroQuote | zeroBackslash) & HIGH;
  }

  /**
   * The offset of the first byte from {@code p} on that is not {@link #PLAIN}, or {@code limit}.
   */
  static int skipPlain(byte[] in, int p, int limit) {
    while (p + 8 <= limit && notPlain((long) LONG.get(in, p)) == 0) {
      p += 8;
    }
    while (p < limit && PLAIN[in[p] & 0xFF]) {
      p++;
    }
    return p;
  }

  /**
   * Copies the bytes from {@code p} on that are {@link #PLAIN} to {@code out} at {@code o}, which
   * must have room for {@code limit - p} bytes.
   *
   * @return the offset in {@code in} of the first byte not copied; {@code out} holds the bytes
   *     copied, that many from {@code o}
   */
  static int copyPlain(byte[] in, int p, int limit, byte[] out, int o) {
    while (p + 8 <= limit) {
      long x = (long) LONG.get(in, p);
      if (notPlain(x) != 0) {
        break;
      }
      LONG.set(out, o, x);
      p += 8;
      o += 8;
    }
    while (p < limit) {
      byte b = in[p];
      if (!PLAIN[b & 0xFF]) {
        break;
      }
      out[o++] = b;
      p++;
    }
    return p;
  }

  /**
   * @param in the input, never {@code null}; not modified
   * @return whether {@code in} is valid JSON that {@link JsonCanonicalizer#canonicalize} returns
   *     unchanged, as recognised by the rules on the class
   */
  private static final int[] NO_NAMES = new int[0];

  static boolean isCanonical(byte[] in) {
    final int len = in.length;
    int p = 0;
    // Per open container: bit d of containers is set for an object at depth d; for an object,
    // names[2d] and names[2d + 1] delimit its previous member name (start after the opening
    // quote, end at the closing quote), start -1 before the first member.
    long objects = 0;
    int[] names = NO_NAMES; // grown at the first object: most payloads are checked without one
    int depth = 0;
    if (len == 0) {
      return false;
    }
    while (true) {
      // ---- one value at p
      if (p >= len) {
        return false;
      }
      byte b = in[p];
      switch (b) {
        case '{':
          if (depth == MAX_DEPTH) {
            return false;
          }
          p++;
          if (p < len && in[p] == '}') {
            p++;
            break; // an empty object is a complete value
          }
          if (2 * depth + 1 >= names.length) {
            names = Arrays.copyOf(names, Math.max(2 * 8, 2 * names.length));
          }
          objects |= 1L << depth;
          names[2 * depth] = -1;
          depth++;
          p = member(in, p, names, depth - 1);
          if (p < 0) {
            return false;
          }
          continue;
        case '[':
          if (depth == MAX_DEPTH) {
            return false;
          }
          p++;
          if (p < len && in[p] == ']') {
            p++;
            break;
          }
          objects &= ~(1L << depth);
          depth++;
          continue;
        case '"':
          p = string(in, p);
          if (p < 0) {
            return false;
          }
          break;
        case 't':
          if (!literal(in, p, 't', 'r', 'u', 'e')) {
            return false;
          }
          p += 4;
          break;
        case 'f':
          if (p + 5 > len || in[p + 4] != 'e' || !literal(in, p + 1, 'a', 'l', 's', 'e')) {
            return false;
          }
          p += 5;
          break;
        case 'n':
          if (!literal(in, p, 'n', 'u', 'l', 'l')) {
            return false;
          }
          p += 4;
          break;
        default:
          p = number(in, p);
          if (p < 0) {
            return false;
          }
      }
      // ---- a value is complete: close containers or move to the next element
      while (true) {
        if (depth == 0) {
          return p == len;
        }
        if (p >= len) {
          return false;
        }
        byte c = in[p];
        boolean object = (objects & (1L << (depth - 1))) != 0;
        if (c == ',') {
          p++;
          if (object) {
            p = member(in, p, names, depth - 1);
            if (p < 0) {
              return false;
            }
          }
          break; // next value
        }
        if (c != (object ? '}' : ']')) {
          return false;
        }
        p++;
        depth--;
      }
    }
  }

  /**
   * At a member name: checks {@code "name":} and that the name sorts after the object's previous
   * one.
   *
   * @return the offset of the member's value, or -1 to take the general path
   */
  private static int member(byte[] in, int p, int[] names, int d) {
    int len = in.length;
    if (p >= len || in[p] != '"') {
      return -1;
    }
    int start = p + 1;
    int q = skipPlain(in, start, len);
    int end;
    if (q < len && in[q] == '"') {
      end = q;
    } else if (q < len && in[q] < 0) {
      // non-ASCII: validate the rest as a string; an escape in a name takes the general path
      int after = string(in, p);
      if (after < 0) {
        return -1;
      }
      end = after - 1;
      for (int i = q; i < end; i++) {
        if (in[i] == '\\') {
          return -1;
        }
      }
    } else {
      return -1;
    }
    int prev = names[2 * d];
    if (prev >= 0 && compareNames(in, prev, names[2 * d + 1], start, end) >= 0) {
      return -1; // out of order, or a duplicate
    }
    names[2 * d] = start;
    names[2 * d + 1] = end;
    int colon = end + 1;
    if (colon >= len || in[colon] != ':') {
      return -1;
    }
    return colon + 1;
  }

  /**
   * Compares two names given as well-formed UTF-8 without escapes by their UTF-16 code units (RFC
   * 8785 §3.2.3). Byte order is code point order, which is UTF-16 order except between a
   * supplementary character (lead byte F0–F4, a surrogate pair in UTF-16) and one of U+E000–U+FFFF
   * (lead byte EE or EF).
   */
  private static int compareNames(byte[] in, int aFrom, int aTo, int bFrom, int bTo) {
    int lenA = aTo - aFrom;
    int lenB = bTo - bFrom;
    int common = Math.min(lenA, lenB);
    int mismatch = Arrays.mismatch(in, aFrom, aFrom + common, in, bFrom, bFrom + common);
    if (mismatch < 0) {
      return lenA - lenB;
    }
    int x = in[aFrom + mismatch] & 0xFF;
    int y = in[bFrom + mismatch] & 0xFF;
    if (x >= 0xF0 && y >= 0xEE && y <= 0xEF) {
      return -1;
    }
    if (y >= 0xF0 && x >= 0xEE && x <= 0xEF) {
      return 1;
    }
    return x - y;
  }

  /**
   * At an opening quote: checks that the string is well-formed and canonically escaped.
   *
   * @return the offset after the closing quote, or -1 to take the general path
   */
  private static int string(byte[] in, int p) {
    int len = in.length;
    p++;
    while (true) {
      p = skipPlain(in, p, len);
      if (p >= len) {
        return -1;
      }
      int b = in[p];
      if (b == '"') {
        return p + 1;
      }
      if (b == '\\') {
        if (p + 1 >= len) {
          return -1;
        }
        int e = in[p + 1];
        if (SHORT_ESCAPE[e & 0xFF]) {
          p += 2;
          continue;
        }
        // a control without a short escape: backslash, u, 0, 0, two lowercase hex digits
        if (e != 'u' || p + 6 > len || in[p + 2] != '0' || in[p + 3] != '0') {
          return -1;
        }
        int hi = in[p + 4];
        int lo = in[p + 5];
        int cp;
        if (hi == '0' || hi == '1') {
          cp = (hi - '0') << 4;
        } else {
          return -1;
        }
        if (lo >= '0' && lo <= '9') {
          cp |= lo - '0';
        } else if (lo >= 'a' && lo <= 'f') {
          cp |= lo - 'a' + 10;
        } else {
          return -1;
        }
        if (cp == '\b' || cp == '\t' || cp == '\n' || cp == '\f' || cp == '\r') {
          return -1;
        }
        p += 6;
        continue;
      }
      if (b >= 0) {
        return -1; // a raw control character
      }
      int n = utf8Length(in, p);
      if (n < 0) {
        return -1;
      }
      p += n;
    }
  }

  /** The length of the well-formed UTF-8 sequence at {@code p}, or -1 ({@link Utf8}). */
  private static int utf8Length(byte[] in, int p) {
    int n = Utf8.sequenceLength(in, p, in.length);
    return n < 0 ? -1 : n;
  }

  private static boolean literal(byte[] in, int p, char a, char b, char c, char d) {
    return p + 4 <= in.length && in[p] == a && in[p + 1] == b && in[p + 2] == c && in[p + 3] == d;
  }

  /**
   * At what should be a number: checks that it is in a canonical form recognised here.
   *
   * @return the offset after it, or -1 to take the general path
   */
  private static int number(byte[] in, int p) {
    int len = in.length;
    boolean negative = false;
    if (in[p] == '-') {
      negative = true;
      p++;
      if (p >= len) {
        return -1;
      }
    }
    int intStart = p;
    byte c = in[p];
    if (c == '0') {
      p++;
    } else if (c >= '1' && c <= '9') {
      p++;
      while (p < len && in[p] >= '0' && in[p] <= '9') {
        p++;
      }
    } else {
      return -1;
    }
    int intLen = p - intStart;
    if (intLen > PLAIN_DIGITS) {
      return -1; // written with an exponent
    }
    boolean zero = intLen == 1 && c == '0';
    if (p < len && (in[p] == 'e' || in[p] == 'E')) {
      return -1;
    }
    if (p >= len || in[p] != '.') {
      if (zero && negative) {
        return -1; // -0 is 0
      }
      if (p < len && in[p] >= '0' && in[p] <= '9') {
        return -1; // a leading zero
      }
      return p;
    }
    p++;
    int fracStart = p;
    while (p < len && in[p] >= '0' && in[p] <= '9') {
      p++;
    }
    if (p == fracStart || in[p - 1] == '0') {
      return -1; // no digit, or a trailing zero (or an all-zero fraction)
    }
    if (p < len && (in[p] == 'e' || in[p] == 'E')) {
      return -1;
    }
    if (zero) {
      int zeros = 0;
      while (in[fracStart + zeros] == '0') {
        zeros++;
      }
      if (zeros > MAX_LEADING_FRACTION_ZEROS) {
        return -1; // written with an exponent
      }
    }
    return p;
  }
}
