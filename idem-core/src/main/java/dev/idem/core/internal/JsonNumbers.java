package dev.idem.core.internal;

/**
 * The numbers of {@link JsonCanonicalizer}: validates one RFC 8259 §6 number and writes the exact
 * decimal value it denotes in Idem's canonical layout, without converting it to binary floating
 * point and without big-number arithmetic.
 *
 * <h2>The canonical form</h2>
 *
 * Every nonzero number has exactly one way to be written as {@code ±0.d1d2…dk × 10^n} with {@code
 * d1 ≠ 0} and {@code dk ≠ 0}: its significant digits are those of the input with leading and
 * trailing zeros removed, wherever the decimal point and the exponent put them. These digits are
 * then laid out as ECMAScript {@code Number::toString} lays out a double's digits (the layout RFC
 * 8785 §3.2.2.3 adopts), but with all of them:
 *
 * <ul>
 *   <li>{@code k ≤ n ≤ 21}: the digits, then {@code n − k} zeros ({@code 1e2} → {@code 100});
 *   <li>{@code 0 < n ≤ 21}: the digits with a decimal point after the {@code n}-th ({@code
 *       12.340} → {@code 12.34});
 *   <li>{@code −6 < n ≤ 0}: {@code 0.}, then {@code −n} zeros, then the digits ({@code 2e-3} →
 *       {@code 0.002});
 *   <li>otherwise {@code d1}, then {@code .d2…dk} if {@code k > 1}, then {@code e}, the sign
 *       ({@code +} or {@code -}) and the decimal exponent {@code n − 1} without leading zeros
 *       ({@code 1E400} → {@code 1e+400}).
 * </ul>
 *
 * A minus sign precedes a negative value. Zero, in any spelling ({@code 0}, {@code -0}, {@code
 * 0.000}, {@code 0e99}), is {@code 0}: JSON numbers are decimal values (RFC 8259 §6), and in decimal
 * arithmetic there is one zero. The text therefore denotes the value exactly, so two numbers have
 * the same canonical text if and only if they have the same value.
 *
 * <p>The layout agrees with RFC 8785 for every number whose decimal value is the shortest
 * round-trip representation of an IEEE-754 double, such as every integer of magnitude below 2^53
 * and every decimal of at most 15 significant digits within the double range. Where RFC 8785 would
 * round to a double (more digits than a double holds), this keeps the digits; where RFC 8785 would
 * reject the number (beyond ±1.8e308) or turn it into 0 (below 4.9e-324), this keeps the value.
 *
 * <h2>Limit</h2>
 *
 * A nonzero number whose decimal exponent {@code n − 1} (that of its first significant digit) lies
 * outside ±{@value #MAX_EXPONENT} is rejected: no parser of any platform holds such a value, and
 * the bound keeps the exponent an exact {@code long}. The limit depends on the value only, never on
 * its spelling, so equal numbers are accepted or rejected together. Time and memory are linear in
 * the number's length.
 *
 * <p>Not part of the public API. Stateless; safe to call from any number of threads.
 */
final class JsonNumbers {

  /** The largest magnitude of a nonzero number's decimal exponent that is accepted. */
  static final long MAX_EXPONENT = 999_999_999L;

  /** Exponents are accumulated up to here; anything larger is out of range anyway. */
  private static final long EXPONENT_SATURATION = 1_000_000_000_000_000L;

  /** Plain integers of up to this many digits print as they are. */
  private static final int PLAIN_DIGITS = 21;

  private JsonNumbers() {}

  /**
   * At {@code '-'} or a digit: validates the number (RFC 8259 §6) and writes its canonical form.
   *
   * @param in the input
   * @param start the number's first byte
   * @param len the input's length
   * @param out receives the canonical text; its capacity invariant holds again afterwards
   * @return the offset just after the number
   * @throws dev.idem.core.InvalidPayloadException if it is not a JSON number, or out of range
   */
  static int canonicalize(byte[] in, int start, int len, CanonicalJsonWriter out) {
    int p = start;
    boolean negative = false;
    if (in[p] == '-') {
      negative = true;
      p++;
      if (p >= len) {
        throw JsonCanonicalizer.invalid(p, "expected a digit after '-' but found end of input");
      }
    }
    final int intStart = p;
    byte c = in[p];
    if (c == '0') {
      p++;
      if (p < len && in[p] >= '0' && in[p] <= '9') {
        throw JsonCanonicalizer.invalid(intStart, "leading zeros are not allowed in numbers");
      }
    } else if (c >= '1' && c <= '9') {
      p++;
      while (p < len && in[p] >= '0' && in[p] <= '9') {
        p++;
      }
    } else if (c == 'I' || c == 'N') {
      throw JsonCanonicalizer.invalid(p, "NaN and Infinity are not valid JSON numbers");
    } else {
      throw JsonCanonicalizer.invalid(
          p, "expected a digit after '-' but found " + JsonParser.describe(in, p));
    }
    final int intEnd = p;
    int fracStart = p;
    int fracEnd = p;
    boolean hasExp = false;
    long exp = 0;
    if (p < len && in[p] == '.') {
      p++;
      fracStart = p;
      if (p >= len || in[p] < '0' || in[p] > '9') {
        throw JsonCanonicalizer.invalid(
            p, "expected a digit after the decimal point but found " + JsonParser.describe(in, p));
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
        throw JsonCanonicalizer.invalid(
            p, "expected a digit in the exponent but found " + JsonParser.describe(in, p));
      }
      while (p < len && in[p] >= '0' && in[p] <= '9') {
        if (exp < EXPONENT_SATURATION) {
          exp = exp * 10 + (in[p] - '0');
        }
        p++;
      }
      if (expNegative) {
        exp = -exp;
      }
    }
    final int end = p;
    final int intLen = intEnd - intStart;

    // A plain integer of up to 21 digits is already canonical (k <= n = intLen <= 21).
    if (!hasExp && fracStart == fracEnd && intLen <= PLAIN_DIGITS) {
      if (intLen == 1 && in[intStart] == '0') {
        out.write('0'); // -0 is 0
      } else {
        out.write(in, start, end - start);
      }
      return end;
    }

    // The digits as one sequence D = integer part ++ fraction part, indexed from 0.
    final int fracLen = fracEnd - fracStart;
    final int total = intLen + fracLen;
    int first = 0;
    while (first < total && digit(in, intStart, intLen, fracStart, first) == '0') {
      first++;
    }
    if (first == total) {
      out.write('0'); // every spelling of zero
      out.reserve(len - end);
      return end;
    }
    int last = total - 1;
    while (digit(in, intStart, intLen, fracStart, last) == '0') {
      last--;
    }
    final int k = last - first + 1;
    // value = 0.d1..dk * 10^n; exp is saturated far beyond what the check below accepts
    final long n = (long) intLen - first + exp;
    final long exponent = n - 1;
    if (exponent > MAX_EXPONENT || exponent < -MAX_EXPONENT) {
      throw JsonCanonicalizer.invalid(
          start,
          "number out of range: the decimal exponent of its first significant digit must lie"
              + " between -"
              + MAX_EXPONENT
              + " and "
              + MAX_EXPONENT);
    }

    if (negative) {
      out.write('-');
    }
    if (k <= n && n <= PLAIN_DIGITS) {
      digits(in, intStart, intLen, fracStart, first, last + 1, out);
      out.repeat('0', n - k);
    } else if (0 < n && n <= PLAIN_DIGITS) {
      int point = first + (int) n;
      digits(in, intStart, intLen, fracStart, first, point, out);
      out.write('.');
      digits(in, intStart, intLen, fracStart, point, last + 1, out);
    } else if (-6 < n && n <= 0) {
      out.write('0');
      out.write('.');
      out.repeat('0', -n);
      digits(in, intStart, intLen, fracStart, first, last + 1, out);
    } else {
      digits(in, intStart, intLen, fracStart, first, first + 1, out);
      if (k > 1) {
        out.write('.');
        digits(in, intStart, intLen, fracStart, first + 1, last + 1, out);
      }
      out.write('e');
      out.write(exponent < 0 ? '-' : '+');
      out.decimal(Math.abs(exponent));
    }
    out.reserve(len - end);
    return end;
  }

  /** The digit at index {@code i} of the sequence integer part ++ fraction part. */
  private static byte digit(byte[] in, int intStart, int intLen, int fracStart, int i) {
    return i < intLen ? in[intStart + i] : in[fracStart + i - intLen];
  }

  /** Writes the digits at indexes [from, to) of the sequence integer part ++ fraction part. */
  private static void digits(
      byte[] in, int intStart, int intLen, int fracStart, int from, int to, CanonicalJsonWriter out) {
    if (from < intLen) {
      int stop = Math.min(to, intLen);
      out.write(in, intStart + from, stop - from);
      from = stop;
    }
    if (from < to) {
      out.write(in, fracStart + from - intLen, to - from);
    }
  }
}
