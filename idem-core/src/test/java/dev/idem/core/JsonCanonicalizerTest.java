package dev.idem.core;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.internal.JsonCanonicalizer;
import java.math.BigDecimal;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class JsonCanonicalizerTest {

  static String canon(String json) {
    return new String(JsonCanonicalizer.canonicalize(json.getBytes(UTF_8)), UTF_8);
  }

  static byte[] bytes(int... values) {
    byte[] b = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      b[i] = (byte) values[i];
    }
    return b;
  }

  static void rejects(String json, int offset, String problem) {
    rejects(json.getBytes(UTF_8), offset, problem);
  }

  static void rejects(byte[] json, int offset, String problem) {
    assertThatThrownBy(() -> JsonCanonicalizer.canonicalize(json))
        .isInstanceOf(InvalidPayloadException.class)
        .hasMessageStartingWith("invalid JSON at byte " + offset + ": ")
        .hasMessageContaining(problem);
  }

  // ---- RFC 8785 examples -----------------------------------------------------------------------

  /** The example with exact numbers: 333333333.33333329 keeps its digits (RFC 8785 rounds them). */
  @Test
  void rfc8785Section322ExampleWithExactNumbers() {
    String input =
        "{\n"
            + "  \"numbers\": [333333333.33333329, 1E30, 4.50,\n"
            + "                2e-3, 0.000000000000000000000000001],\n"
            + "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
            + "  \"literals\": [null, true, false]\n"
            + "}";
    assertThat(canon(input))
        .isEqualTo(
            "{\"literals\":[null,true,false],"
                + "\"numbers\":[333333333.33333329,1e+30,4.5,0.002,1e-27],"
                + "\"string\":\"\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
  }

  @Test
  void rfc8785Section323SortsByUtf16CodeUnits() {
    String input =
        "{\n"
            + "  \"\\u20ac\": \"Euro Sign\",\n"
            + "  \"\\r\": \"Carriage Return\",\n"
            + "  \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\",\n"
            + "  \"1\": \"One\",\n"
            + "  \"\\ud83d\\ude00\": \"Emoji: Grinning Face\",\n"
            + "  \"\\u0080\": \"Control\",\n"
            + "  \"\\u00f6\": \"Latin Small Letter O With Diaeresis\"\n"
            + "}";
    assertThat(canon(input))
        .isEqualTo(
            "{\"\\r\":\"Carriage Return\","
                + "\"1\":\"One\","
                + "\"\u0080\":\"Control\","
                + "\"\u00f6\":\"Latin Small Letter O With Diaeresis\","
                + "\"\u20ac\":\"Euro Sign\","
                + "\"\ud83d\ude00\":\"Emoji: Grinning Face\","
                + "\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}");
  }

  @Test
  void sortsLiteralUtf8NamesByUtf16NotByUtf8() {
    // U+1F600 is D83D DE00 in UTF-16 (before U+FB33) but F0 9F 98 80 in UTF-8 (after EF AC B3)
    assertThat(canon("{\"\ufb33\":1,\"\ud83d\ude00\":2,\"\ue000\":3,\"z\":4}"))
        .isEqualTo("{\"z\":4,\"\ud83d\ude00\":2,\"\ue000\":3,\"\ufb33\":1}");
  }

  @Test
  void jcsReferenceWeirdJson() {
    // cyberphone/json-canonicalization testdata/input/weird.json
    String input =
        "{\n"
            + "  \"\\u20ac\": \"Euro Sign\",\n"
            + "  \"\\r\": \"Carriage Return\",\n"
            + "  \"\\u000a\": \"Newline\",\n"
            + "  \"1\": \"One\",\n"
            + "  \"\\u0080\": \"Control\\u007f\",\n"
            + "  \"\\ud83d\\ude02\": \"Smiley\",\n"
            + "  \"\\u00f6\": \"Latin Small Letter O With Diaeresis\",\n"
            + "  \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\",\n"
            + "  \"</script>\": \"Browser Challenge\"\n"
            + "}";
    assertThat(canon(input))
        .isEqualTo(
            "{\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"1\":\"One\","
                + "\"</script>\":\"Browser Challenge\",\"\u0080\":\"Control\u007f\","
                + "\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\","
                + "\"\ud83d\ude02\":\"Smiley\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}");
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        // as RFC 8785 writes them: shortest forms of doubles are unchanged
        "1e+30 | 1e+30",
        "1E30 | 1e+30",
        "4.50 | 4.5",
        "2e-3 | 0.002",
        "0.000001 | 0.000001",
        "0.0000001 | 1e-7",
        "1e-7 | 1e-7",
        "0.000000000000000000000000001 | 1e-27",
        "-0 | 0",
        "-0.0 | 0",
        "0e10 | 0",
        "-0.000e-5 | 0",
        "0e99999999999999999999 | 0",
        "0 | 0",
        "9007199254740992 | 9007199254740992",
        "-9007199254740992 | -9007199254740992",
        "295147905179352830000 | 295147905179352830000",
        "5e-324 | 5e-324",
        "-5e-324 | -5e-324",
        "1.7976931348623157e308 | 1.7976931348623157e+308",
        "-1.7976931348623157E+308 | -1.7976931348623157e+308",
        "2.2250738585072014e-308 | 2.2250738585072014e-308",
        "0.1 | 0.1",
        "0.30000000000000004 | 0.30000000000000004",
        "1e21 | 1e+21",
        "1e20 | 100000000000000000000",
        "1.0 | 1",
        "1e0 | 1",
        "10E-1 | 1",
        "100e-2 | 1",
        "0.1e1 | 1",
        "1E2 | 100",
        "1e+2 | 100",
        "100 | 100",
        "-17 | -17",
        "1.5e300 | 1.5e+300",
        "-1.25E-10 | -1.25e-10",
        "12.34e1 | 123.4",
        "1234.5e-10 | 1.2345e-7",
        "0.00001 | 0.00001",
        "0.000001e0 | 0.000001",
        "0.0000033333333333333333 | 0.0000033333333333333333",
        "1424953923781206.2 | 1424953923781206.2",
        "123456789012345 | 123456789012345",
        "1234567890123456 | 1234567890123456",
        "100000000000000000000.0 | 100000000000000000000",
        "1000000000000000000000 | 1e+21",
        // where RFC 8785 rounds to a double, the digits stay
        "333333333.33333329 | 333333333.33333329",
        "9007199254740993 | 9007199254740993",
        "295147905179352825856 | 295147905179352825856",
        "4.9406564584124654e-324 | 4.9406564584124654e-324",
        "0.10000000000000001 | 0.10000000000000001",
        "999999999999999999999 | 999999999999999999999",
        "123456789012345678901 | 123456789012345678901",
        "1234567890123456789012 | 1.234567890123456789012e+21",
        "12345678901234567 | 12345678901234567",
        "1234567890123456789 | 1234567890123456789",
        "1234567890123456700 | 1234567890123456700",
        "9223372036854775807 | 9223372036854775807",
        "9223372036854775808 | 9223372036854775808",
        "-9223372036854775809 | -9223372036854775809",
        "1125899906842624.75 | 1125899906842624.75",
        // where RFC 8785 refuses the number or turns it into 0, the value stays
        "1e309 | 1e+309",
        "1e400 | 1e+400",
        "-1.8e308 | -1.8e+308",
        "1.7976931348623159e308 | 1.7976931348623159e+308",
        "1e-400 | 1e-400",
        "-1e-400 | -1e-400",
        "1e999999999 | 1e+999999999",
        "-1e-999999999 | -1e-999999999",
        "0.1e1000000000 | 1e+999999999",
        "10e999999998 | 1e+999999999",
        "0.00e-99999999999 | 0",
      })
  void numbersAreExactDecimalsInEcmaScriptLayout(String input, String expected) {
    assertThat(canon(input)).isEqualTo(expected);
    assertThat(canon("[" + input + "]")).isEqualTo("[" + expected + "]");
    assertThat(canon(expected)).isEqualTo(expected);
  }

  /**
   * RFC 8785 Appendix B: the canonical text of these IEEE-754 values is unchanged, and the exact
   * binary value of each double, written out in full, stays that exact value.
   */
  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "0000000000000000 | 0",
        "8000000000000000 | 0",
        "0000000000000001 | 5e-324",
        "8000000000000001 | -5e-324",
        "7fefffffffffffff | 1.7976931348623157e+308",
        "ffefffffffffffff | -1.7976931348623157e+308",
        "4340000000000000 | 9007199254740992",
        "c340000000000000 | -9007199254740992",
        "4430000000000000 | 295147905179352830000",
        "44b52d02c7e14af5 | 9.999999999999997e+22",
        "44b52d02c7e14af6 | 1e+23",
        "44b52d02c7e14af7 | 1.0000000000000001e+23",
        "444b1ae4d6e2ef4e | 999999999999999700000",
        "444b1ae4d6e2ef4f | 999999999999999900000",
        "444b1ae4d6e2ef50 | 1e+21",
        "3eb0c6f7a0b5ed8c | 9.999999999999997e-7",
        "3eb0c6f7a0b5ed8d | 0.000001",
        "41b3de4355555553 | 333333333.3333332",
        "41b3de4355555554 | 333333333.33333325",
        "41b3de4355555555 | 333333333.3333333",
        "41b3de4355555556 | 333333333.3333334",
        "41b3de4355555557 | 333333333.33333343",
        "becbf647612f3696 | -0.0000033333333333333333",
        "43143ff3c1cb0959 | 1424953923781206.2",
      })
  void rfc8785AppendixBNumbersAreUnchanged(String hexBits, String expected) {
    double d = Double.longBitsToDouble(Long.parseUnsignedLong(hexBits, 16));
    assertThat(canon(expected)).isEqualTo(expected);
    assertThat(Double.parseDouble(expected)).isEqualTo(d == 0 ? 0.0 : d);
    BigDecimal exact = new BigDecimal(d);
    assertThat(new BigDecimal(canon(exact.toString()))).isEqualByComparingTo(exact);
    assertThat(canon(exact.toPlainString())).isEqualTo(canon(exact.toString()));
  }

  // ---- strings ---------------------------------------------------------------------------------

  @Test
  void escapesOnlyWhatRfc8785Requires() {
    StringBuilder in = new StringBuilder("\"");
    for (int c = 0; c < 0x20; c++) {
      in.append(String.format("\\u%04X", c));
    }
    in.append("\"");
    assertThat(canon(in.toString()))
        .isEqualTo(
            "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007"
                + "\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f"
                + "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017"
                + "\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"");
  }

  @Test
  void shortEscapesStayShortAndOthersBecomeLiteral() {
    assertThat(canon("\"\\b\\f\\n\\r\\t\\\"\\\\\\/\"")).isEqualTo("\"\\b\\f\\n\\r\\t\\\"\\\\/\"");
    assertThat(canon("\"\\u0022\\u005C\\u002f\\u0041\"")).isEqualTo("\"\\\"\\\\/A\"");
    assertThat(canon("\"\\u00e9\\u00E9\u00e9\"")).isEqualTo("\"\u00e9\u00e9\u00e9\"");
    assertThat(canon("\"\\u2028\\u2029\\u007f\\ufeff\"")).isEqualTo("\"\u2028\u2029\u007f\ufeff\"");
    assertThat(canon("\"\\uD83D\\uDE00 \ud83d\ude00\"")).isEqualTo("\"\ud83d\ude00 \ud83d\ude00\"");
    assertThat(canon("\"<script>&'\"")).isEqualTo("\"<script>&'\"");
    // noncharacters are valid Unicode scalar values and are kept
    assertThat(canon("\"\\uffff\\ufdd0\"")).isEqualTo("\"\uffff\ufdd0\"");
  }

  /** JSON strings are sequences of code points (RFC 8259 §8.3): never Unicode-normalised. */
  @Test
  void stringsAreNotUnicodeNormalised() {
    assertThat(canon("\"e\u0301\"")).isEqualTo("\"e\u0301\"");
    assertThat(canon("\"e\\u0301\"")).isEqualTo("\"e\u0301\"");
    assertThat(canon("\"\u00e9\"")).isEqualTo("\"\u00e9\"");
    assertThat(canon("\"\ufb01\"")).isEqualTo("\"\ufb01\""); // the ligature, not "fi"
    assertThat(canon("{\"\u00e9\":1,\"e\u0301\":2}")).isEqualTo("{\"e\u0301\":2,\"\u00e9\":1}");
  }

  @Test
  void outputIsUtf8() {
    byte[] out = JsonCanonicalizer.canonicalize("\"\\u20ac\\ud83d\\ude00\"".getBytes(UTF_8));
    assertThat(out).containsExactly(bytes('"', 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, '"'));
  }

  // ---- structure -------------------------------------------------------------------------------

  @Test
  void removesWhitespaceAndKeepsArrayOrder() {
    assertThat(canon(" \t\r\n[ 3 , 1 ,\n2 , { } , [ ] , \"\" ] \n"))
        .isEqualTo("[3,1,2,{},[],\"\"]");
  }

  @Test
  void sortsNestedObjectsIndependently() {
    assertThat(canon("{\"b\":{\"z\":1,\"y\":[{\"d\":1,\"c\":2}]},\"a\":{\"x\":null}}"))
        .isEqualTo("{\"a\":{\"x\":null},\"b\":{\"y\":[{\"c\":2,\"d\":1}],\"z\":1}}");
  }

  @Test
  void sortsLargeObjects() {
    StringBuilder in = new StringBuilder("{");
    StringBuilder expected = new StringBuilder("{");
    for (int i = 99; i >= 0; i--) {
      in.append(i == 99 ? "" : ",")
          .append("\"k")
          .append(String.format("%03d", i))
          .append("\":")
          .append(i);
    }
    for (int i = 0; i < 100; i++) {
      expected
          .append(i == 0 ? "" : ",")
          .append("\"k")
          .append(String.format("%03d", i))
          .append("\":")
          .append(i);
    }
    assertThat(canon(in.append('}').toString())).isEqualTo(expected.append('}').toString());
  }

  @Test
  void comparesNamesLongerThanEightBytesAndPrefixes() {
    assertThat(
            canon("{\"abcdefghij\":1,\"abcdefgh\":2,\"abcdefghi\":3,\"abcdefghia\":4,\"abc\":5}"))
        .isEqualTo("{\"abc\":5,\"abcdefgh\":2,\"abcdefghi\":3,\"abcdefghia\":4,\"abcdefghij\":1}");
    assertThat(canon("{\"b\":1,\"a\\u0000\":2,\"a\":3}"))
        .isEqualTo("{\"a\":3,\"a\\u0000\":2,\"b\":1}");
  }

  @Test
  void acceptsTopLevelScalars() {
    assertThat(canon("true")).isEqualTo("true");
    assertThat(canon(" false ")).isEqualTo("false");
    assertThat(canon("null")).isEqualTo("null");
    assertThat(canon("\"x\"")).isEqualTo("\"x\"");
    assertThat(canon("42")).isEqualTo("42");
  }

  @Test
  void ignoresOneLeadingByteOrderMark() {
    byte[] in = bytes(0xEF, 0xBB, 0xBF, '{', '"', 'a', '"', ':', '1', '}');
    assertThat(new String(JsonCanonicalizer.canonicalize(in), UTF_8)).isEqualTo("{\"a\":1}");
  }

  @Test
  void acceptsMaximumDepth() {
    String in = "[".repeat(JsonCanonicalizer.MAX_DEPTH) + "]".repeat(JsonCanonicalizer.MAX_DEPTH);
    assertThat(canon(in)).isEqualTo(in);
    String objects =
        "{\"a\":".repeat(JsonCanonicalizer.MAX_DEPTH - 1)
            + "{}"
            + "}".repeat(JsonCanonicalizer.MAX_DEPTH - 1);
    assertThat(canon(objects)).isEqualTo(objects);
  }

  @Test
  void acceptsUtf8Boundaries() {
    byte[] in =
        bytes(
            '"', 0xC2, 0x80, 0xDF, 0xBF, 0xE0, 0xA0, 0x80, 0xED, 0x9F, 0xBF, 0xEE, 0x80, 0x80, 0xEF,
            0xBF, 0xBF, 0xF0, 0x90, 0x80, 0x80, 0xF4, 0x8F, 0xBF, 0xBF, '"');
    assertThat(JsonCanonicalizer.canonicalize(in)).isEqualTo(in);
  }

  @Test
  void doesNotModifyItsInput() {
    byte[] in = "{ \"b\" : 1 , \"a\" : 2 }".getBytes(UTF_8);
    byte[] copy = in.clone();
    JsonCanonicalizer.canonicalize(in);
    assertThat(in).isEqualTo(copy);
  }

  // ---- rejections ------------------------------------------------------------------------------

  @Nested
  class Rejects {

    @Test
    void nullInput() {
      assertThatThrownBy(() -> JsonCanonicalizer.canonicalize(null))
          .isInstanceOf(NullPointerException.class);
    }

    @Test
    void emptyInput() {
      rejects("", 0, "end of input");
      rejects("  \n", 3, "end of input");
      rejects(bytes(0xEF, 0xBB, 0xBF), 3, "end of input");
    }

    @Test
    void trailingData() {
      rejects("[1] x", 4, "unexpected data after the JSON value: 'x'");
      rejects("1 2", 2, "unexpected data after the JSON value");
      rejects("{}}", 2, "unexpected data after the JSON value: '}'");
      rejects("truex", 4, "unexpected data after the JSON value");
      rejects("\"a\"\u0000", 3, "unexpected data after the JSON value: byte 0x00");
    }

    @Test
    void secondByteOrderMark() {
      rejects(bytes(0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF, '1'), 3, "byte 0xef");
      rejects(bytes('[', 0xEF, 0xBB, 0xBF, '1', ']'), 1, "expected a value but found byte 0xef");
    }

    @Test
    void duplicateNames() {
      rejects("{\"a\":1,\"a\":2}", 7, "duplicate member name \"a\"");
      rejects("{\"a\":1,\"\\u0061\":2}", 7, "duplicate member name \"a\"");
      rejects("{\"b\":1,\"a\":2,\"b\":3}", 13, "duplicate member name \"b\"");
      rejects("{\"x\":{\"\u00e9\":1,\"\\u00e9\":2}}", 13, "duplicate member name \"\\u00e9\"");
      rejects("{\"\u00e9\":1,\"a\":0,\"\\u00E9\":2}", 14, "duplicate member name");
      rejects("{\"abcdefghij\":1,\"abcdefghij\":2}", 16, "duplicate member name \"abcdefghij\"");
      // same name in different objects is fine
      assertThat(canon("[{\"a\":1},{\"a\":2}]")).isEqualTo("[{\"a\":1},{\"a\":2}]");
    }

    @Test
    void duplicateNamesInLargeObjects() {
      StringBuilder in = new StringBuilder("{");
      for (int i = 40; i > 0; i--) {
        in.append("\"k").append(i).append("\":").append(i).append(',');
      }
      int offset = in.length();
      in.append("\"k7\":0}");
      rejects(in.toString(), offset, "duplicate member name \"k7\"");
    }

    @Test
    void structuralErrors() {
      rejects("{\"a\":1,}", 7, "expected a member name string but found '}'");
      rejects("[1,]", 3, "expected a value but found ']'");
      rejects("[1 2]", 3, "expected ',' or ']' but found '2'");
      rejects("{\"a\":1 \"b\":2}", 7, "expected ',' or '}' but found '\"'");
      rejects("{\"a\" 1}", 5, "expected ':' but found '1'");
      rejects("{1:2}", 1, "expected a member name string but found '1'");
      rejects("{'a':1}", 1, "expected a member name string but found '''");
      rejects("[,1]", 1, "expected a value but found ','");
      rejects("]", 0, "expected a value but found ']'");
      rejects("[1;2]", 2, "expected ',' or ']' but found ';'");
      rejects("[1]]", 3, "unexpected data after the JSON value");
    }

    @Test
    void truncatedInput() {
      rejects("[1", 2, "unexpected end of input, expected ',' or ']'");
      rejects("[1,", 3, "unexpected end of input, expected a value");
      rejects("{", 1, "unexpected end of input, expected a member name");
      rejects("{\"a\"", 4, "unexpected end of input, expected ':'");
      rejects("{\"a\":", 5, "unexpected end of input, expected a value");
      rejects("{\"a\":1", 6, "unexpected end of input, expected ',' or '}'");
      rejects("\"abc", 4, "unterminated string starting at byte 0");
      rejects("[\"a\\", 3, "unterminated escape sequence");
      rejects("\"\\u12", 1, "truncated \\u escape");
    }

    @Test
    void invalidLiterals() {
      rejects("[tru]", 1, "invalid literal, expected 'true'");
      rejects("nul", 0, "invalid literal, expected 'null'");
      rejects("fals", 0, "invalid literal, expected 'false'");
      rejects("True", 0, "expected a value but found 'T'");
      rejects("undefined", 0, "expected a value but found 'u'");
    }

    @Test
    void invalidNumbers() {
      rejects("01", 0, "leading zeros are not allowed");
      rejects("[-01]", 2, "leading zeros are not allowed");
      rejects("00.5", 0, "leading zeros are not allowed");
      rejects("1.", 2, "expected a digit after the decimal point but found end of input");
      rejects("[1.]", 3, "expected a digit after the decimal point but found ']'");
      rejects("1.e5", 2, "expected a digit after the decimal point but found 'e'");
      rejects(".5", 0, "expected a value but found '.'");
      rejects("+1", 0, "expected a value but found '+'");
      rejects("1e", 2, "expected a digit in the exponent");
      rejects("1e+", 3, "expected a digit in the exponent");
      rejects("1E-x", 3, "expected a digit in the exponent but found 'x'");
      rejects("-", 1, "expected a digit after '-' but found end of input");
      rejects("-a", 1, "expected a digit after '-' but found 'a'");
      rejects("- 1", 1, "expected a digit after '-'");
      rejects("0x10", 1, "unexpected data after the JSON value: 'x'");
    }

    @Test
    void nanAndInfinity() {
      rejects("NaN", 0, "NaN and Infinity are not valid JSON numbers");
      rejects("[Infinity]", 1, "NaN and Infinity are not valid JSON numbers");
      rejects("-Infinity", 1, "NaN and Infinity are not valid JSON numbers");
    }

    @Test
    void exponentsBeyondTheLimitAreRefused() {
      rejects("1e1000000000", 0, "number out of range");
      rejects("[-1e1000000000]", 1, "number out of range");
      rejects("1e-1000000000", 0, "number out of range");
      rejects("0.01e-999999998", 0, "number out of range"); // 1e-1000000000
      rejects("12e999999999", 0, "number out of range"); // 1.2e+1000000000; 12e999999998 is fine
      rejects("1e99999999999999999999", 0, "number out of range");
      rejects("1e-99999999999999999999999999999999999999", 0, "number out of range");
      rejects("{\"a\":1E+1000000000}", 5, "between -999999999 and 999999999");
    }

    @Test
    void controlCharactersInStrings() {
      rejects("\"a\nb\"", 2, "unescaped control character 0x0a in string");
      rejects("[\"\t\"]", 2, "unescaped control character 0x09");
      rejects(bytes('"', 0x00, '"'), 1, "unescaped control character 0x00");
      rejects(bytes('"', 0x1F, '"'), 1, "unescaped control character 0x1f");
    }

    @Test
    void invalidEscapes() {
      rejects("\"\\x\"", 1, "invalid escape sequence 'x' after '\\'");
      rejects("\"ab\\'\"", 3, "invalid escape sequence");
      rejects("\"\\U0041\"", 1, "invalid escape sequence 'U'");
      rejects("\"\\u12G4\"", 5, "invalid hex digit 'G' in \\u escape");
      rejects("\"\\u 123\"", 3, "invalid hex digit byte 0x20");
    }

    @Test
    void loneSurrogates() {
      rejects("\"\\ud800\"", 1, "lone surrogate \\ud800");
      rejects("\"\\uDC00\"", 1, "lone surrogate \\udc00");
      rejects("\"ab\\ud83d\\u0041\"", 3, "lone surrogate \\ud83d");
      rejects("\"\\ud83dx\"", 1, "lone surrogate \\ud83d");
      rejects("\"\\ud83d\\ud83d\"", 1, "lone surrogate \\ud83d");
      rejects("\"\\ud83d\\n\"", 1, "lone surrogate");
      rejects("{\"\\ude00\":1}", 2, "lone surrogate \\ude00");
    }

    @Test
    void invalidUtf8() {
      rejects(bytes('"', 0xC3, 0x28, '"'), 1, "invalid UTF-8 sequence");
      rejects(bytes('"', 0xC0, 0xAF, '"'), 1, "invalid UTF-8 lead byte 0xc0"); // overlong '/'
      rejects(bytes('"', 0xE0, 0x80, 0xAF, '"'), 1, "invalid UTF-8 sequence"); // overlong
      rejects(bytes('"', 0xF0, 0x80, 0x80, 0xAF, '"'), 1, "invalid UTF-8 sequence"); // overlong
      rejects(bytes('"', 0xED, 0xA0, 0x80, '"'), 1, "invalid UTF-8 sequence"); // U+D800
      rejects(bytes('"', 0xF4, 0x90, 0x80, 0x80, '"'), 1, "invalid UTF-8 sequence"); // > U+10FFFF
      rejects(bytes('"', 0xF5, 0x80, 0x80, 0x80, '"'), 1, "invalid UTF-8 lead byte 0xf5");
      rejects(bytes('"', 'a', 0x80, '"'), 2, "invalid UTF-8 lead byte 0x80");
      rejects(bytes('"', 0xFF, '"'), 1, "invalid UTF-8 lead byte 0xff");
      rejects(bytes('"', 0xE2, 0x82), 1, "truncated UTF-8 sequence");
      rejects(bytes('"', 0xE2, 0x82, '"'), 1, "invalid UTF-8 sequence");
      rejects(bytes('{', '"', 0xC3, '"', ':', '1', '}'), 2, "invalid UTF-8 sequence");
      rejects(bytes(0xC3, 0xA9), 0, "expected a value but found byte 0xc3");
      rejects(bytes('[', '1', 0xA0, ']'), 2, "expected ',' or ']' but found byte 0xa0");
    }

    @Test
    void tooDeepNesting() {
      String tooDeep = "[".repeat(JsonCanonicalizer.MAX_DEPTH + 1);
      rejects(tooDeep, JsonCanonicalizer.MAX_DEPTH, "nesting deeper than 1000 levels");
      rejects(
          "{\"a\":".repeat(JsonCanonicalizer.MAX_DEPTH) + "{}",
          5 * JsonCanonicalizer.MAX_DEPTH,
          "nesting deeper than 1000 levels");
    }

    @Test
    void veryDeepNestingIsAnInvalidPayloadNotAStackOverflow() {
      byte[] in = "[".repeat(100_000).getBytes(UTF_8);
      assertThatThrownBy(() -> JsonCanonicalizer.canonicalize(in))
          .isInstanceOf(InvalidPayloadException.class)
          .hasMessageContaining("nesting deeper than");
      byte[] objects = "{\"a\":".repeat(100_000).getBytes(UTF_8);
      assertThatThrownBy(() -> JsonCanonicalizer.canonicalize(objects))
          .isInstanceOf(InvalidPayloadException.class)
          .hasMessageContaining("nesting deeper than");
    }
  }
}
