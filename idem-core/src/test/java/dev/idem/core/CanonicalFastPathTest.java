package dev.idem.core;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.FingerprintPropertiesTest.J;
import dev.idem.core.FingerprintPropertiesTest.JArr;
import dev.idem.core.FingerprintPropertiesTest.JBool;
import dev.idem.core.FingerprintPropertiesTest.JNull;
import dev.idem.core.FingerprintPropertiesTest.JNum;
import dev.idem.core.FingerprintPropertiesTest.JObj;
import dev.idem.core.FingerprintPropertiesTest.JStr;
import dev.idem.core.internal.JsonCanonicalizer;
import dev.idem.core.internal.JsonCanonicalizer.Canonical;
import dev.idem.core.testing.Gen;
import dev.idem.core.testing.Properties;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The fast path for already-canonical JSON (digest the input as it is) gives the same bytes and
 * fingerprints as the general path (parse and rewrite), on valid, canonical, near-canonical and
 * invalid inputs, and it bails out wherever the input is not exactly canonical.
 */
class CanonicalFastPathTest {

  /** Bytes a one-byte mutation writes: structure, number parts, escapes, whitespace, bad UTF-8. */
  private static final byte[] NOISE = {
    ' ', '\n', '\t', '0', '1', '9', '.', 'e', 'E', '-', '+', '"', '\\', '/', 'u', 'b', 'a', 'z',
    'A', 'F', '{', '}', '[', ']', ',', ':', 0x00, 0x1F, 0x7F, (byte) 0x80, (byte) 0xBF,
    (byte) 0xC0, (byte) 0xC3, (byte) 0xE0, (byte) 0xED, (byte) 0xEE, (byte) 0xEF, (byte) 0xF0,
    (byte) 0xF4, (byte) 0xF5, (byte) 0xFF
  };

  // ---- the oracle ------------------------------------------------------------------------------

  /**
   * Checks that the fast path and the general path agree on {@code input}: if the check calls it
   * canonical, the general path accepts it and returns it unchanged; the fingerprint of {@link
   * Fingerprint#ofJson} is the digest of the general path's bytes, or both refuse the input with
   * the same message; and the request fingerprint is that of the canonical form.
   *
   * @return whether the fast path took the input
   */
  static boolean agree(byte[] input) {
    byte[] general;
    try {
      general = JsonCanonicalizer.canonicalize(input);
    } catch (InvalidPayloadException e) {
      assertThat(JsonCanonicalizer.isCanonical(input)).as(show(input)).isFalse();
      assertThatThrownBy(() -> Fingerprint.ofJson(input))
          .isInstanceOf(InvalidPayloadException.class)
          .hasMessage(e.getMessage());
      assertThatThrownBy(() -> JsonCanonicalizer.canonicalForm(input))
          .isInstanceOf(InvalidPayloadException.class)
          .hasMessage(e.getMessage());
      return false;
    }
    boolean fast = JsonCanonicalizer.isCanonical(input);
    if (fast) {
      assertThat(general).as(show(input)).isEqualTo(input);
    }
    Canonical form = JsonCanonicalizer.canonicalForm(input);
    assertThat(Arrays.copyOf(form.array(), form.length())).as(show(input)).isEqualTo(general);
    assertThat(Fingerprint.ofJson(input)).as(show(input)).isEqualTo(Fingerprint.ofBytes(general));
    assertThat(json(input)).as(show(input)).isEqualTo(json(general));
    return fast;
  }

  private static Fingerprint json(byte[] body) {
    return Fingerprint.request()
        .method("POST")
        .target("/t")
        .contentType("application/json")
        .body(body)
        .build();
  }

  private static String show(byte[] input) {
    return new String(input, UTF_8) + " " + Arrays.toString(input);
  }

  // ---- properties ------------------------------------------------------------------------------

  @Test
  void canonicalFormsTakeTheFastPathUnlessTheyUseUnrecognisedSpellings() {
    Properties.forAll(
        "canonicalFormsTakeTheFastPathUnlessTheyUseUnrecognisedSpellings",
        1000,
        FingerprintPropertiesTest::doc,
        FingerprintPropertiesTest.DOC_EDGES,
        c -> {
          J value = c.value();
          byte[] canonical =
              JsonCanonicalizer.canonicalize(
                  FingerprintPropertiesTest.noisy(value, new Random(c.seed())).getBytes(UTF_8));
          boolean fast = agree(canonical);
          assertThat(fast || unrecognised(value) || depth(value) > 64)
              .as("a canonical form the check should recognise: %s", new String(canonical, UTF_8))
              .isTrue();
        });
  }

  @Test
  void compactAndNoisySpellingsAgree() {
    Properties.forAll(
        "compactAndNoisySpellingsAgree",
        1000,
        FingerprintPropertiesTest::doc,
        FingerprintPropertiesTest.DOC_EDGES,
        c -> {
          agree(FingerprintPropertiesTest.compact(c.value()).getBytes(UTF_8));
          agree(FingerprintPropertiesTest.noisy(c.value(), new Random(c.seed())).getBytes(UTF_8));
        });
  }

  /** A value, the seed that spells it, and where and which byte of {@link #NOISE} to change. */
  record Mutation(J value, long seed, int where, int what) {}

  @Test
  void oneByteFromCanonicalAgrees() {
    List<Mutation> edges = new ArrayList<>();
    // every noise byte at every place of a document with every kind of token
    J every =
        new JObj(
            List.of(
                Map.entry("a", new JArr(List.of(new JNum(new BigDecimal("-12.5")), new JNull()))),
                Map.entry("b\u00e9", new JStr("x\"\\\n\ud83d\ude00")),
                Map.entry("c", new JBool(true)),
                Map.entry("d", new JObj(List.of(Map.entry("", new JBool(false))))),
                Map.entry("e", new JNum(new BigDecimal("1e400")))));
    int length = JsonCanonicalizer.canonicalize(FingerprintPropertiesTest.compact(every)
        .getBytes(UTF_8)).length;
    for (int where = 0; where <= length; where++) {
      for (int what = 0; what < NOISE.length; what++) {
        edges.add(new Mutation(every, 0, where, what));
      }
    }
    // every edge value with the int boundaries as places and bytes
    int k = 0;
    for (J value : FingerprintPropertiesTest.JSON_EDGES) {
      for (int where : Gen.INT_EDGES) {
        edges.add(new Mutation(value, k, where, k++));
      }
    }
    Properties.forAll(
        "oneByteFromCanonicalAgrees",
        2000,
        r -> new Mutation(FingerprintPropertiesTest.value(r, 3), r.nextLong(), Gen.ints(r),
            Gen.ints(r)),
        edges,
        c -> {
          Random random = new Random(c.seed());
          byte[] canonical =
              JsonCanonicalizer.canonicalize(
                  FingerprintPropertiesTest.noisy(c.value(), random).getBytes(UTF_8));
          int at = Math.floorMod(c.where(), canonical.length + 1);
          byte noise = NOISE[Math.floorMod(c.what(), NOISE.length)];
          // replaced, inserted, deleted, or swapped with the next byte
          if (at < canonical.length) {
            byte[] replaced = canonical.clone();
            replaced[at] = noise;
            agree(replaced);
            byte[] deleted = new byte[canonical.length - 1];
            System.arraycopy(canonical, 0, deleted, 0, at);
            System.arraycopy(canonical, at + 1, deleted, at, canonical.length - at - 1);
            agree(deleted);
          }
          if (at + 1 < canonical.length) {
            byte[] swapped = canonical.clone();
            swapped[at] = canonical[at + 1];
            swapped[at + 1] = canonical[at];
            agree(swapped);
          }
          byte[] inserted = new byte[canonical.length + 1];
          System.arraycopy(canonical, 0, inserted, 0, at);
          inserted[at] = noise;
          System.arraycopy(canonical, at, inserted, at + 1, canonical.length - at);
          agree(inserted);
        });
  }

  private static final String[] INTEGER_EDGES = {"0", "1", "9", "00", "01", "", "9".repeat(25)};
  private static final String[] FRACTION_EDGES = {"", ".", ".0", ".5", ".000000000000", ".99"};
  private static final String[] EXPONENT_EDGES = {
    "", "e", "E", "e+", "e-", "E-", "e0", "E0", "e+0", "e-0", "e999", "E-999", "e1", "e-1"
  };

  /** A number as JSON text, often not valid: sign, integer part, fraction and exponent. */
  static String numberText(SplittableRandom r) {
    String sign = Gen.oneOf(r, "", "", "-");
    String integer =
        switch (Gen.weighted(r, 2, 3, 1)) {
          case 0 -> "0";
          case 1 -> Gen.chars(r, "0123456789", 1, 25);
          default -> Gen.oneOf(r, "00", "01", "");
        };
    String fraction =
        switch (Gen.weighted(r, 3, 1, 3)) {
          case 0 -> "";
          case 1 -> ".";
          default -> "." + Gen.chars(r, "0000123456789", 1, 12);
        };
    String exponent =
        Gen.weighted(r, 4, 1) == 0
            ? ""
            : Gen.oneOf(r, "e", "E", "e+", "e-", "E-") + Gen.chars(r, "0123456789", 0, 3);
    return sign + integer + fraction + exponent;
  }

  @Test
  void numbersAgreeAloneInArraysAndAsMemberValues() {
    List<String> edges = new ArrayList<>();
    for (String sign : new String[] {"", "-"}) {
      for (String integer : INTEGER_EDGES) {
        for (String fraction : FRACTION_EDGES) {
          for (String exponent : EXPONENT_EDGES) {
            edges.add(sign + integer + fraction + exponent);
          }
        }
      }
    }
    Properties.forAll(
        "numbersAgreeAloneInArraysAndAsMemberValues",
        2000,
        CanonicalFastPathTest::numberText,
        edges,
        number -> {
          agree(number.getBytes(UTF_8));
          agree(("[" + number + "," + number + "]").getBytes(UTF_8));
          agree(("{\"a\":" + number + ",\"b\":[" + number + "]}").getBytes(UTF_8));
        });
  }

  // ---- the model: what the check is allowed not to recognise ----------------------------------

  /** Whether a canonical form of the value has an exponent number or an escape in a name. */
  private static boolean unrecognised(J j) {
    if (j instanceof JNum n) {
      String text =
          new String(JsonCanonicalizer.canonicalize(n.value().toString().getBytes(UTF_8)), UTF_8);
      return text.indexOf('e') >= 0;
    }
    if (j instanceof JArr a) {
      return a.items().stream().anyMatch(CanonicalFastPathTest::unrecognised);
    }
    if (j instanceof JObj o) {
      for (Map.Entry<String, J> m : o.members()) {
        if (m.getKey().chars().anyMatch(c -> c < 0x20 || c == '"' || c == '\\')
            || unrecognised(m.getValue())) {
          return true;
        }
      }
    }
    return false;
  }

  private static int depth(J j) {
    if (j instanceof JArr a) {
      return 1 + a.items().stream().mapToInt(CanonicalFastPathTest::depth).max().orElse(0);
    }
    if (j instanceof JObj o) {
      return 1 + o.members().stream().mapToInt(m -> depth(m.getValue())).max().orElse(0);
    }
    return 0;
  }

  // ---- where the fast path must bail out --------------------------------------------------------

  private static boolean agree(String json) {
    return agree(json.getBytes(UTF_8));
  }

  @Test
  void canonicalExamplesTakeTheFastPath() {
    for (String json :
        new String[] {
          "{}", "[]", "0", "-1", "123456789012345678901", "0.5", "-0.000001", "12.34",
          "true", "false", "null", "\"\"", "\"a/b\\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\u007f\"",
          "{\"a\":1,\"aa\":[],\"b\":{\"\":null,\"c\":\"caf\u00e9\"}}", "[[[{\"x\":[1,2.5]}]]]",
          "{\"\u00e9\":1,\"\u20ac\":2,\"\ud83d\ude00\":3,\"\ue000\":4}"
        }) {
      assertThat(agree(json)).as(json).isTrue();
    }
  }

  @Test
  void whitespaceAndByteOrderMarkTakeTheGeneralPath() {
    assertThat(agree(" {}")).isFalse();
    assertThat(agree("{} ")).isFalse();
    assertThat(agree("[1, 2]")).isFalse();
    assertThat(agree("{\"a\" :1}")).isFalse();
    assertThat(agree("{\"a\":1\n}")).isFalse();
    assertThat(agree("\ufeff{}")).isFalse();
  }

  @Test
  void numbersNotInCanonicalFormTakeTheGeneralPath() {
    for (String number :
        new String[] {
          "1.0", "1e2", "1E2", "1e+2", "-0", "-0.0", "0.0", "10.50", "1234567890123456789012",
          "0.0000001", "1e400", "1e+400", "1e-7", "2.5e-10"
        }) {
      assertThat(agree(number)).as(number).isFalse();
      assertThat(agree("[" + number + "]")).as(number).isFalse();
    }
  }

  @Test
  void invalidNumbersAreRefusedAsBefore() {
    for (String number : new String[] {"01", "-", "1.", ".5", "+1", "-a", "1e", "1e+", "0x1"}) {
      assertThat(agree("[" + number + "]")).as(number).isFalse();
      assertThatThrownBy(() -> Fingerprint.ofJson(("[" + number + "]").getBytes(UTF_8)))
          .as(number)
          .isInstanceOf(InvalidPayloadException.class);
    }
  }

  @Test
  void stringsWithNonCanonicalEscapesTakeTheGeneralPath() {
    for (String string :
        new String[] {
          "\\/", "\\u00e9", "\\u0041", "\\u001F", "\\u0008", "\\u0009", "\\u000a", "\\u000c",
          "\\u000d", "\\u0022", "\\u005c", "\\u007f", "\\u0020", "\\ud83d\\ude00"
        }) {
      String json = "[\"x" + string + "y\"]";
      assertThat(agree(json)).as(json).isFalse();
    }
  }

  @Test
  void membersOutOfOrderOrDuplicatedTakeTheGeneralPath() {
    assertThat(agree("{\"b\":1,\"a\":2}")).isFalse();
    assertThat(agree("{\"ab\":1,\"a\":2}")).isFalse();
    assertThat(agree("{\"a\":{\"y\":1,\"x\":2}}")).isFalse();
    // a duplicate is refused by the general path, never taken as sorted
    assertThat(agree("{\"a\":1,\"a\":1}")).isFalse();
    assertThatThrownBy(() -> Fingerprint.ofJson("{\"a\":1,\"a\":1}".getBytes(UTF_8)))
        .isInstanceOf(InvalidPayloadException.class)
        .hasMessageContaining("duplicate member name");
    assertThat(agree("{\"\u00e9\":1,\"\u00e9\":2}")).isFalse();
    // the order of the members of an enclosing object is tracked apart from nested ones
    assertThat(agree("{\"a\":{\"z\":1},\"b\":{\"a\":1}}")).isTrue();
    assertThat(agree("{\"b\":{\"a\":1},\"a\":{\"z\":1}}")).isFalse();
  }

  @Test
  void namesOrderByUtf16CodeUnitsNotByUtf8Bytes() {
    // U+10000 is D800 DC00 in UTF-16, before U+E000; its UTF-8 lead byte F0 is after EE
    String sorted = "{\"\ud800\udc00\":1,\"\ue000\":2}";
    String unsorted = "{\"\ue000\":2,\"\ud800\udc00\":1}";
    assertThat(agree(sorted)).isTrue();
    assertThat(agree(unsorted)).isFalse();
    assertThat(JsonCanonicalizer.canonicalize(unsorted.getBytes(UTF_8)))
        .isEqualTo(sorted.getBytes(UTF_8));
    // U+FFFF (EF BF BF) against U+10FFFF (F4 8F BF BF), and ASCII against both
    assertThat(agree("{\"a\":0,\"\udbff\udfff\":1,\"\uffff\":2}")).isTrue();
    assertThat(agree("{\"a\":0,\"\uffff\":2,\"\udbff\udfff\":1}")).isFalse();
  }

  @Test
  void namesWithEscapesTakeTheGeneralPath() {
    assertThat(agree("{\"a\\nb\":1}")).isFalse();
    assertThat(agree("{\"\\\"\":1,\"a\":2}")).isFalse();
    assertThat(agree("{\"\u00e9\\t\":1}")).isFalse();
  }

  @Test
  void invalidUtf8AndControlCharactersAreRefusedAsBefore() {
    byte[][] inputs = {
      {'"', (byte) 0xC0, (byte) 0x80, '"'}, // overlong
      {'"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"'}, // encoded surrogate
      {'"', (byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80, '"'}, // above U+10FFFF
      {'"', (byte) 0xE2, (byte) 0x82, '"'}, // truncated
      {'"', (byte) 0x80, '"'}, // lone continuation byte
      {'"', 0x01, '"'}, // raw control character
      {'{', '"', (byte) 0xC3, '"', ':', '1', '}'}, // truncated, in a name
    };
    for (byte[] input : inputs) {
      assertThat(agree(input)).as(show(input)).isFalse();
      assertThatThrownBy(() -> Fingerprint.ofJson(input))
          .as(show(input))
          .isInstanceOf(InvalidPayloadException.class);
    }
  }

  @Test
  void incompleteOrTrailingInputIsRefusedAsBefore() {
    for (String json :
        new String[] {
          "", "{", "[", "{\"a\"", "{\"a\":", "{\"a\":1", "[1,", "[1,]", "{\"a\":1,}", "{}{}",
          "{}x", "[]]", "\"abc", "tru", "nul", "fals", "truex", "{1:2}", "{\"a\"1}", "[1:2]"
        }) {
      assertThat(agree(json)).as(json).isFalse();
      assertThatThrownBy(() -> Fingerprint.ofJson(json.getBytes(UTF_8)))
          .as(json)
          .isInstanceOf(InvalidPayloadException.class);
    }
  }

  @Test
  void nestingBeyondWhatTheCheckFollowsTakesTheGeneralPath() {
    String deep = "[".repeat(64) + "]".repeat(64);
    String deeper = "[".repeat(65) + "]".repeat(65);
    assertThat(agree(deep)).isTrue();
    assertThat(agree(deeper)).isFalse();
    String objects = "{\"a\":".repeat(70) + "1" + "}".repeat(70);
    assertThat(agree(objects)).isFalse();
    String tooDeep = "[".repeat(JsonCanonicalizer.MAX_DEPTH + 1) + "]".repeat(1001);
    assertThatThrownBy(() -> Fingerprint.ofJson(tooDeep.getBytes(UTF_8)))
        .isInstanceOf(InvalidPayloadException.class)
        .hasMessageContaining("nesting deeper than");
  }
}
