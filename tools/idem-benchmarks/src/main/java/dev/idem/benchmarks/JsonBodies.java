package dev.idem.benchmarks;

import java.nio.charset.StandardCharsets;

/**
 * Deterministic, realistic JSON request bodies of an exact size in bytes: an order with a nested
 * owner object and line items whose members come in varying, unsorted order, with non-ASCII text,
 * string escapes and numbers in several spellings ({@code 19.99}, {@code 1e2}, {@code 1.2345e3},
 * {@code -3}), so that RFC 8785 canonicalization has real work to do (sorting, re-spelling numbers
 * and escapes). The last member, {@code note}, is padded to reach the exact size.
 */
public final class JsonBodies {

  private static final String HEAD =
      "{\"title\":\"Weekly order \\u2013 M\u00fcller\",\"owner\":{\"name\":\"Zo\u00eb\",\"id\":4821,"
          + "\"email\":\"zoe@example.com\",\"vip\":false},\"items\":[";
  private static final String TAIL = "],\"total\":1.2345e3,\"currency\":\"EUR\",\"coupon\":null,\"note\":\"";
  private static final String END = "\"}";

  private JsonBodies() {}

  /**
   * @param size the exact length in bytes of the UTF-8 result, at least 120
   * @return a JSON object of exactly {@code size} bytes; the same bytes for the same size
   * @throws IllegalArgumentException if {@code size} is too small for the skeleton
   */
  public static byte[] of(int size) {
    StringBuilder sb = new StringBuilder(size + 64).append(HEAD);
    int length = utf8Length(HEAD);
    int fixed = utf8Length(TAIL) + utf8Length(END);
    for (int i = 0; ; i++) {
      String item = item(i);
      int extra = (i == 0 ? 0 : 1) + utf8Length(item);
      if (length + extra + fixed > size) {
        break;
      }
      if (i > 0) {
        sb.append(',');
      }
      sb.append(item);
      length += extra;
    }
    sb.append(TAIL);
    length += utf8Length(TAIL);
    int pad = size - length - utf8Length(END);
    if (pad < 0) {
      throw new IllegalArgumentException("a body needs at least " + (length + utf8Length(END)) + " bytes, asked for " + size);
    }
    for (int k = 0; k < pad; k++) {
      sb.append((char) ('a' + k % 26));
    }
    sb.append(END);
    byte[] bytes = sb.toString().getBytes(StandardCharsets.UTF_8);
    if (bytes.length != size) {
      throw new IllegalStateException("generated " + bytes.length + " bytes instead of " + size);
    }
    return bytes;
  }

  /** One line item; the member order rotates with {@code i}. */
  private static String item(int i) {
    String[] members = {
      "\"sku\":\"SKU-" + String.format("%05d", i) + "\"",
      "\"qty\":" + (1 + i % 7),
      "\"price\":" + (i % 3 == 0 ? "19.99" : i % 3 == 1 ? "1e2" : "-3"),
      "\"tags\":[\"gift\",\"fragile\",\"caf\u00e9\"]",
      "\"attrs\":{\"size\":\"M\",\"color\":\"navy\",\"weight\":0.25}",
      "\"comment\":\"say \\\"hi\\\"\\n\\u00e9\""
    };
    StringBuilder sb = new StringBuilder(160).append('{');
    for (int k = 0; k < members.length; k++) {
      if (k > 0) {
        sb.append(',');
      }
      sb.append(members[(k + i) % members.length]);
    }
    return sb.append('}').toString();
  }

  private static int utf8Length(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      n += c < 0x80 ? 1 : c < 0x800 ? 2 : 3; // no surrogates in these strings
    }
    return n;
  }
}
