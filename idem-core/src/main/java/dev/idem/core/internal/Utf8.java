package dev.idem.core.internal;

import java.util.HexFormat;

/**
 * Well-formed UTF-8 sequences (The Unicode Standard, table 3-7 "Well-Formed UTF-8 Byte Sequences":
 * no overlong forms, no surrogates, nothing above U+10FFFF), shared by the JSON parser and the
 * canonical-form check so that both accept exactly the same bytes. Stateless and thread-safe.
 */
final class Utf8 {

  /** The lead byte cannot start a multi-byte sequence. */
  static final int INVALID_LEAD = -1;
  /** The sequence runs past the end of the input. */
  static final int TRUNCATED = -2;
  /** A continuation byte is out of its range. */
  static final int INVALID_SEQUENCE = -3;

  private Utf8() {}

  /**
   * @param in the bytes, never {@code null}
   * @param p the index of a lead byte of 0x80 or more, {@code 0 <= p < end}
   * @param end the index after the last byte that belongs to the input, at most {@code in.length}
   * @return the length of the well-formed sequence at {@code p} (2, 3 or 4), or {@link
   *     #INVALID_LEAD}, {@link #TRUNCATED} or {@link #INVALID_SEQUENCE}
   */
  static int sequenceLength(byte[] in, int p, int end) {
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
      return INVALID_LEAD;
    }
    if (p + n > end) {
      return TRUNCATED;
    }
    int b1 = in[p + 1] & 0xFF;
    if (b1 < lo || b1 > hi) {
      return INVALID_SEQUENCE;
    }
    for (int i = 2; i < n; i++) {
      int c = in[p + i] & 0xFF;
      if (c < 0x80 || c > 0xBF) {
        return INVALID_SEQUENCE;
      }
    }
    return n;
  }

  /**
   * @param failure a negative result of {@link #sequenceLength}
   * @param lead the sequence's lead byte
   * @return what is wrong, for an error message
   */
  static String describe(int failure, byte lead) {
    switch (failure) {
      case INVALID_LEAD:
        return "invalid UTF-8 lead byte 0x" + HexFormat.of().toHexDigits(lead);
      case TRUNCATED:
        return "truncated UTF-8 sequence";
      default:
        return "invalid UTF-8 sequence";
    }
  }
}
