package dev.idem.core;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.internal.JsonCanonicalizer;
import dev.idem.core.testing.Gen;
import dev.idem.core.testing.Properties;
import java.math.BigDecimal;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class FingerprintPropertiesTest {

  // ---- a JSON model ----------------------------------------------------------------------------

  sealed interface J permits JNull, JBool, JNum, JStr, JArr, JObj {}

  record JNull() implements J {}

  record JBool(boolean value) implements J {}

  /** A number: its exact value; the compact form writes {@link BigDecimal#toString()}. */
  record JNum(BigDecimal value) implements J {}

  record JStr(String value) implements J {}

  record JArr(List<J> items) implements J {}

  /** Members with distinct names, in insertion order. */
  record JObj(List<Map.Entry<String, J>> members) implements J {}

  // ---- generators ------------------------------------------------------------------------------

  /** A JSON value nested at most {@code depth} containers deep. */
  static J value(SplittableRandom r, int depth) {
    int kind = depth == 0 ? 0 : Gen.weighted(r, 4, 1, 2);
    return switch (kind) {
      case 0 -> leaf(r);
      case 1 -> new JArr(Gen.listOf(r, 4, x -> value(x, depth - 1)));
      default -> {
        int size = Gen.listOf(r, 5, x -> 0).size();
        Map<String, J> members = new LinkedHashMap<>();
        for (int tries = 0; members.size() < size && tries < 4 * size; tries++) {
          members.putIfAbsent(string(r), value(r, depth - 1));
        }
        yield new JObj(new ArrayList<>(members.entrySet()));
      }
    };
  }

  private static J leaf(SplittableRandom r) {
    return switch (Gen.weighted(r, 1, 1, 3, 3)) {
      case 0 -> new JNull();
      case 1 -> new JBool(r.nextBoolean());
      case 2 -> new JNum(FingerprintNumbersTest.decimal(r));
      default -> new JStr(string(r));
    };
  }

  /** Up to 8 code points: mostly ASCII, with escapes, controls, the BMP and supplementary ones. */
  static String string(SplittableRandom r) {
    return Gen.string(
        r,
        8,
        x ->
            switch (Gen.weighted(x, 8, 2, 2, 2, 1)) {
              case 0 -> Gen.between(x, 0x20, 0x7E);
              case 1 -> Gen.oneOf(x, (int) '"', (int) '\\', (int) '/', 0x7F);
              case 2 -> Gen.between(x, 0, 0x1F);
              case 3 -> {
                int c = 0xD800;
                while (c >= 0xD800 && c <= 0xDFFF) { // a lone surrogate is no code point
                  c = Gen.between(x, 0x80, 0xFFFF);
                }
                yield c;
              }
              default -> Gen.between(x, 0x10000, 0x10FFFF);
            });
  }

  /**
   * Strings at the boundaries of what {@link #string} draws: empty, one code point of each kind
   * and at each end of its range (every control, the short escapes, the last code point before the
   * surrogates and the first after, the byte order mark, U+FFFF, U+10000, U+10FFFF), and the
   * longest strings of controls, quotes and supplementary code points.
   */
  static final List<String> STRING_EDGES =
      List.of(
          "", " ", "~", "a", "\"", "\\", "/", "\u007f", "\u0000", "\u0001", "\b", "\t", "\n",
          "\f", "\r", "\u001f", "\u0080", "\u00e9", "\u07ff", "\u0800", "\ud7ff", "\ue000",
          "\ufeff", "\ufffe", "\uffff", "\ud800\udc00", "\ud83d\ude00", "\udbff\udfff",
          "\u0000".repeat(8), "\u001f\n\"\\/\u007f\u0001\t", "\"".repeat(8), "\\".repeat(8),
          "\udbff\udfff".repeat(8), "a\"\\/\u0000\u00e9\ud83d\ude00\uffff", "~".repeat(8));

  /**
   * Values at the boundaries of what {@link #value} draws: every scalar edge, empty and full
   * containers, each edge string as a member name, names whose UTF-16 and UTF-8 orders differ,
   * nesting as deep as the generator goes, and far deeper (64 and 65 levels, each side of what the
   * fast path follows).
   */
  static final List<J> JSON_EDGES = jsonEdges();

  private static List<J> jsonEdges() {
    List<J> leaves = new ArrayList<>();
    leaves.add(new JNull());
    leaves.add(new JBool(true));
    leaves.add(new JBool(false));
    for (BigDecimal d : FingerprintNumbersTest.DECIMAL_EDGES) {
      leaves.add(new JNum(d));
    }
    for (String string : STRING_EDGES) {
      leaves.add(new JStr(string));
    }
    List<J> out = new ArrayList<>(leaves);
    out.add(new JArr(List.of()));
    out.add(new JObj(List.of()));
    for (J leaf : leaves) {
      out.add(new JArr(List.of(leaf)));
    }
    out.add(new JArr(leaves.subList(0, 4)));
    out.add(new JArr(List.of(new JArr(List.of()), new JObj(List.of()), new JNull(), new JNull())));
    for (String name : STRING_EDGES) {
      out.add(new JObj(List.of(Map.entry(name, new JNull()))));
    }
    out.add(
        new JObj(
            List.of(
                Map.entry("\ue000", new JNum(BigDecimal.valueOf(2))),
                Map.entry("\ud800\udc00", new JNum(BigDecimal.ONE)),
                Map.entry("", new JStr("")),
                Map.entry("\u0000", new JArr(List.of())),
                Map.entry("\uffff", new JObj(List.of())))));
    out.add(
        new JObj(
            List.of(
                Map.entry("b", new JNull()),
                Map.entry("a", new JNull()),
                Map.entry("aa", new JNull()),
                Map.entry("A", new JNull()),
                Map.entry("\u00e9", new JNull()))));
    J arrays = new JStr("");
    J objects = new JNum(BigDecimal.ZERO);
    for (int level = 1; level <= 65; level++) {
      arrays = new JArr(List.of(arrays));
      objects = new JObj(List.of(Map.entry(level % 2 == 0 ? "a" : "", objects)));
      if (level <= 3 || level == 64 || level == 65) {
        out.add(arrays);
        out.add(objects);
      }
    }
    out.add(
        new JArr(
            List.of(
                new JObj(
                    List.of(Map.entry("\"", new JArr(List.of(new JObj(List.of()), new JNull()))))),
                new JNum(new BigDecimal("-0.000")))));
    return List.copyOf(out);
  }

  /** A value and the seed of the {@link Random} that spells it. */
  record Doc(J value, long seed) {}

  static Doc doc(SplittableRandom r) {
    return new Doc(value(r, 3), r.nextLong());
  }

  /** Each edge value, spelled with each of a few edge seeds. */
  static final List<Doc> DOC_EDGES = docEdges();

  private static List<Doc> docEdges() {
    List<Doc> out = new ArrayList<>();
    for (J value : JSON_EDGES) {
      for (long seed : new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE}) {
        out.add(new Doc(value, seed));
      }
    }
    return List.copyOf(out);
  }

  // ---- serializers -----------------------------------------------------------------------------

  /** Compact, members in model order, minimal escapes, numbers as their literal. */
  static String compact(J j) {
    StringBuilder sb = new StringBuilder();
    write(j, sb, null);
    return sb.toString();
  }

  /**
   * The same value spelled differently: members shuffled, whitespace between tokens, random
   * escapes, and numbers in other notations.
   */
  static String noisy(J j, Random random) {
    StringBuilder sb = new StringBuilder();
    space(sb, random);
    write(j, sb, random);
    space(sb, random);
    return sb.toString();
  }

  private static void write(J j, StringBuilder sb, Random r) {
    if (j instanceof JNull) {
      sb.append("null");
    } else if (j instanceof JBool b) {
      sb.append(b.value());
    } else if (j instanceof JNum n) {
      sb.append(
          r == null ? n.value().toString() : FingerprintNumbersTest.spelling(n.value(), r));
    } else if (j instanceof JStr s) {
      string(s.value(), sb, r);
    } else if (j instanceof JArr a) {
      sb.append('[');
      for (int i = 0; i < a.items().size(); i++) {
        if (i > 0) {
          space(sb, r);
          sb.append(',');
        }
        space(sb, r);
        write(a.items().get(i), sb, r);
        space(sb, r);
      }
      sb.append(']');
    } else {
      List<Map.Entry<String, J>> members = new ArrayList<>(((JObj) j).members());
      if (r != null) {
        Collections.shuffle(members, r);
      }
      sb.append('{');
      for (int i = 0; i < members.size(); i++) {
        if (i > 0) {
          sb.append(',');
        }
        space(sb, r);
        string(members.get(i).getKey(), sb, r);
        space(sb, r);
        sb.append(':');
        space(sb, r);
        write(members.get(i).getValue(), sb, r);
        space(sb, r);
      }
      sb.append('}');
    }
  }

  private static void space(StringBuilder sb, Random r) {
    if (r == null) {
      return;
    }
    int n = r.nextInt(4) == 0 ? r.nextInt(3) + 1 : 0;
    for (int i = 0; i < n; i++) {
      sb.append(" \t\n\r".charAt(r.nextInt(4)));
    }
  }

  private static void string(String s, StringBuilder sb, Random r) {
    sb.append('"');
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      i += Character.charCount(cp);
      boolean mustEscape = cp < 0x20 || cp == '"' || cp == '\\';
      boolean escape = mustEscape || (r != null && r.nextInt(5) == 0);
      if (!escape) {
        sb.appendCodePoint(cp);
        continue;
      }
      String shortForm = shortEscape(cp);
      if (shortForm != null && (r == null || r.nextBoolean())) {
        sb.append(shortForm);
      } else if (cp == '/' && r != null && r.nextBoolean()) {
        sb.append("\\/");
      } else {
        for (char c : Character.toChars(cp)) {
          String hex = String.format("%04x", (int) c);
          sb.append("\\u").append(r != null && r.nextBoolean() ? hex.toUpperCase() : hex);
        }
      }
    }
    sb.append('"');
  }

  private static String shortEscape(int cp) {
    switch (cp) {
      case '"':
        return "\\\"";
      case '\\':
        return "\\\\";
      case '\b':
        return "\\b";
      case '\f':
        return "\\f";
      case '\n':
        return "\\n";
      case '\r':
        return "\\r";
      case '\t':
        return "\\t";
      default:
        return null;
    }
  }

  // ---- mutations -------------------------------------------------------------------------------

  static int count(J j) {
    if (j instanceof JArr a) {
      return 1 + a.items().stream().mapToInt(FingerprintPropertiesTest::count).sum();
    }
    if (j instanceof JObj o) {
      return 1 + o.members().stream().mapToInt(m -> count(m.getValue())).sum();
    }
    return 1;
  }

  /** Changes the node with pre-order index {@code target[0]}: a scalar, or a container's size. */
  static J mutate(J j, int[] target, Random r) {
    if (target[0]-- == 0) {
      return changed(j, r);
    }
    if (j instanceof JArr a) {
      List<J> items = new ArrayList<>();
      for (J item : a.items()) {
        items.add(mutate(item, target, r));
      }
      return new JArr(items);
    }
    if (j instanceof JObj o) {
      List<Map.Entry<String, J>> members = new ArrayList<>();
      for (Map.Entry<String, J> m : o.members()) {
        members.add(Map.entry(m.getKey(), mutate(m.getValue(), target, r)));
      }
      return new JObj(members);
    }
    return j;
  }

  private static J changed(J j, Random r) {
    if (j instanceof JNull) {
      return new JBool(false);
    } else if (j instanceof JBool b) {
      return new JBool(!b.value());
    } else if (j instanceof JNum n) {
      return new JNum(FingerprintNumbersTest.neighbour(n.value(), r));
    } else if (j instanceof JStr s) {
      return new JStr(s.value() + (char) ('a' + r.nextInt(26)));
    } else if (j instanceof JArr a) {
      List<J> items = new ArrayList<>(a.items());
      if (!items.isEmpty() && r.nextBoolean()) {
        items.remove(r.nextInt(items.size()));
      } else {
        items.add(r.nextInt(items.size() + 1), new JNull());
      }
      return new JArr(items);
    } else {
      List<Map.Entry<String, J>> members = new ArrayList<>(((JObj) j).members());
      if (!members.isEmpty() && r.nextBoolean()) {
        members.remove(r.nextInt(members.size()));
      } else {
        Set<String> names = members.stream().map(Map.Entry::getKey).collect(Collectors.toSet());
        String name = "new";
        while (names.contains(name)) {
          name += "!";
        }
        members.add(Map.entry(name, new JNum(BigDecimal.ZERO)));
      }
      return new JObj(members);
    }
  }

  private static Fingerprint fp(String json) {
    return Fingerprint.ofJson(json.getBytes(UTF_8));
  }

  // ---- properties ------------------------------------------------------------------------------

  @Test
  void equivalentSpellingsHaveEqualFingerprints() {
    Properties.forAll(
        "equivalentSpellingsHaveEqualFingerprints",
        1000,
        FingerprintPropertiesTest::doc,
        DOC_EDGES,
        c -> {
          String plain = compact(c.value());
          String noisy = noisy(c.value(), new Random(c.seed()));
          assertThat(fp(noisy)).as("%s%nvs%n%s", plain, noisy).isEqualTo(fp(plain));
          assertThat(JsonCanonicalizer.canonicalize(noisy.getBytes(UTF_8)))
              .isEqualTo(JsonCanonicalizer.canonicalize(plain.getBytes(UTF_8)));
        });
  }

  /** A value, the seed of the {@link Random} that changes and spells it, and which node changes. */
  record Change(J value, long seed, int pick) {}

  @Test
  void anyChangeChangesTheFingerprint() {
    // each edge value changed at every node, and with the int boundaries as picks
    List<Change> edges = new ArrayList<>();
    int k = 0;
    for (J value : JSON_EDGES) {
      List<Integer> picks = new ArrayList<>(Gen.INT_EDGES);
      for (int node = 3; node < count(value); node++) {
        picks.add(node);
      }
      for (int pick : picks) {
        long seed = FingerprintNumbersTest.NEIGHBOUR_SEEDS.get(k++ % 4);
        edges.add(new Change(value, seed, pick));
      }
    }
    Properties.forAll(
        "anyChangeChangesTheFingerprint",
        1000,
        r -> new Change(value(r, 3), r.nextLong(), Gen.ints(r)),
        edges,
        c -> {
          Random random = new Random(c.seed());
          int target = Math.floorMod(c.pick(), count(c.value()));
          J changed = mutate(c.value(), new int[] {target}, random);
          String original = noisy(c.value(), random);
          String other = noisy(changed, random);
          assertThat(fp(other)).as("%s%nvs%n%s", original, other).isNotEqualTo(fp(original));
        });
  }

  @Test
  void canonicalFormIsAFixedPoint() {
    // tag::for-all[]
    Properties.forAll(
        "canonicalFormIsAFixedPoint",   // name, shown on failure
        1000,                           // generated cases, at least
        FingerprintPropertiesTest::doc, // Function<SplittableRandom, T>
        DOC_EDGES,                      // List<T>: fixed edge cases, checked first
        c -> {                          // the property, on each case c (c.value(), c.seed())
          byte[] once =
              JsonCanonicalizer.canonicalize(
                  noisy(c.value(), new Random(c.seed())).getBytes(UTF_8));
          byte[] twice = JsonCanonicalizer.canonicalize(once);
          assertThat(twice).isEqualTo(once);
          assertThat(Fingerprint.ofBytes(once)).isEqualTo(Fingerprint.ofJson(once));
        });
    // end::for-all[]
  }

  @Test
  void canonicalFormIsCompactValidUtf8() {
    Properties.forAll(
        "canonicalFormIsCompactValidUtf8",
        1000,
        FingerprintPropertiesTest::doc,
        DOC_EDGES,
        c -> {
          J value = c.value();
          byte[] canonical =
              JsonCanonicalizer.canonicalize(noisy(value, new Random(c.seed())).getBytes(UTF_8));
          String text = new String(canonical, UTF_8);
          assertThat(text.getBytes(UTF_8)).isEqualTo(canonical); // no replacement characters
          assertThat(text).doesNotContain("\n", "\r", "\t");
          if (value instanceof JStr || value instanceof JNum) {
            return;
          }
          assertThat(text).isEqualTo(text.strip());
        });
  }

  // ---- examples --------------------------------------------------------------------------------

  @Test
  void memberOrderAndWhitespaceDoNotMatter() {
    assertThat(fp("{\"a\":1,\"b\":2}")).isEqualTo(fp("{ \"b\":2, \"a\":1 }"));
    assertThat(fp("{\"a\":1,\"b\":2}")).isEqualTo(fp("{\"b\":2.0,\"a\":1e0}"));
  }

  @Test
  void valuesMatter() {
    assertThat(fp("{\"a\":1}")).isNotEqualTo(fp("{\"a\":2}"));
    assertThat(fp("{\"a\":1}")).isNotEqualTo(fp("{\"a\":\"1\"}"));
    assertThat(fp("[1,2]")).isNotEqualTo(fp("[2,1]"));
  }

  @Test
  void ofJsonHashesTheCanonicalForm() throws Exception {
    byte[] expected =
        MessageDigest.getInstance("SHA-256").digest("{\"a\":1,\"b\":[true,null]}".getBytes(UTF_8));
    Fingerprint f = fp(" { \"b\" : [ true , null ] , \"a\" : 1.0 } ");
    assertThat(f.bytes()).isEqualTo(expected);
    assertThat(f).isEqualTo(Fingerprint.ofBytes("{\"a\":1,\"b\":[true,null]}".getBytes(UTF_8)));
  }

  @Test
  void ofBytesHashesRawBytes() {
    // SHA-256("abc"), FIPS 180-2 appendix B.1
    assertThat(Fingerprint.ofBytes("abc".getBytes(UTF_8)).hex())
        .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assertThat(Fingerprint.ofBytes(new byte[0]).hex())
        .isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }

  @Test
  void ofBindsTheMediaTypeAndCanonicalizesJson() {
    byte[] spaced = "{ \"b\":2, \"a\":1 }".getBytes(UTF_8);
    byte[] compact = "{\"a\":1,\"b\":2}".getBytes(UTF_8);
    assertThat(Fingerprint.of("application/json; charset=utf-8", spaced))
        .isEqualTo(Fingerprint.of("application/json", compact))
        .isEqualTo(Fingerprint.request().contentType("Application/JSON").body(compact).build());
    assertThat(Fingerprint.of("text/plain", spaced))
        .isNotEqualTo(Fingerprint.of("text/plain", compact))
        .isNotEqualTo(Fingerprint.of("application/json", spaced));
    assertThat(Fingerprint.of(null, spaced))
        .isNotEqualTo(Fingerprint.of("application/json", spaced))
        .isNotEqualTo(Fingerprint.of("application/octet-stream", spaced));
    assertThat(Fingerprint.of("application/problem+json", spaced))
        .isEqualTo(Fingerprint.of("application/problem+json", compact))
        .isNotEqualTo(Fingerprint.of("application/json", compact));
    assertThatThrownBy(() -> Fingerprint.of("application/json", "{".getBytes(UTF_8)))
        .isInstanceOf(InvalidPayloadException.class);
    assertThat(Fingerprint.of("text/plain", "{".getBytes(UTF_8))).isNotNull();
  }

  @Test
  void isJson() {
    assertThat(Fingerprint.isJson("application/json")).isTrue();
    assertThat(Fingerprint.isJson("Application/JSON")).isTrue();
    assertThat(Fingerprint.isJson("application/json; charset=utf-8")).isTrue();
    assertThat(Fingerprint.isJson(" application/json ;charset=UTF-8")).isTrue();
    assertThat(Fingerprint.isJson("application/problem+json")).isTrue();
    assertThat(Fingerprint.isJson("application/vnd.api+JSON; ext=bulk")).isTrue();
    assertThat(Fingerprint.isJson("application/merge-patch+json")).isTrue();
    assertThat(Fingerprint.isJson(null)).isFalse();
    assertThat(Fingerprint.isJson("")).isFalse();
    assertThat(Fingerprint.isJson("text/plain")).isFalse();
    assertThat(Fingerprint.isJson("application/jsonx")).isFalse();
    assertThat(Fingerprint.isJson("application/json-seq")).isFalse();
    assertThat(Fingerprint.isJson("application/x-ndjson")).isFalse();
    assertThat(Fingerprint.isJson("text/plain; format=application/json")).isFalse();
    assertThat(Fingerprint.isJson("+json")).isFalse();
    assertThat(Fingerprint.isJson("application/+json")).isFalse();
    assertThat(Fingerprint.isJson("json")).isFalse();
    assertThat(Fingerprint.isJson("application/octet-stream")).isFalse();
  }

  @Test
  void nullPayloadsAreRejected() {
    assertThatThrownBy(() -> Fingerprint.ofJson(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Fingerprint.ofBytes(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Fingerprint.of("application/json", null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Fingerprint.of("text/plain", null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Fingerprint.fromHex(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void invalidJsonIsAnInvalidPayload() {
    assertThatThrownBy(() -> fp("{\"a\":1,\"a\":2}"))
        .isInstanceOf(InvalidPayloadException.class)
        .isInstanceOf(IdemException.class)
        .hasMessage("invalid JSON at byte 7: duplicate member name \"a\"");
  }

  @Test
  void hexRoundTripsAndIsLowercase() {
    Fingerprint f = fp("{\"a\":1}");
    assertThat(f.hex()).hasSize(64).matches("[0-9a-f]{64}");
    assertThat(Fingerprint.fromHex(f.hex())).isEqualTo(f).hasSameHashCodeAs(f);
    assertThat(Fingerprint.fromHex(f.hex().toUpperCase())).isEqualTo(f);
    assertThat(f.toString()).isEqualTo("Fingerprint[sha256=" + f.hex() + "]");
  }

  @Test
  void fromHexRejectsMalformedInput() {
    String ok = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    assertThatThrownBy(() -> Fingerprint.fromHex(ok.substring(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("63");
    assertThatThrownBy(() -> Fingerprint.fromHex(ok + "0"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Fingerprint.fromHex("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Fingerprint.fromHex("g" + ok.substring(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("index 0");
    assertThatThrownBy(() -> Fingerprint.fromHex(ok.substring(0, 63) + "\uff10"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("index 63");
    assertThatThrownBy(() -> Fingerprint.fromHex(ok.substring(0, 62) + " 0"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void bytesIsADefensiveCopy() {
    Fingerprint f = fp("[]");
    byte[] b = f.bytes();
    assertThat(b).hasSize(32);
    b[0] ^= 1;
    assertThat(f.bytes()).isNotEqualTo(b);
    assertThat(Fingerprint.fromHex(f.hex()).bytes()).isEqualTo(f.bytes());
  }

  @Test
  void equalsAndHashCode() {
    Fingerprint a = fp("{\"x\":[1,2,3]}");
    Fingerprint b = fp("{ \"x\" : [ 1 , 2 , 3 ] }");
    Fingerprint c = fp("{\"x\":[1,2]}");
    assertThat(a).isEqualTo(a).isEqualTo(b).hasSameHashCodeAs(b).isNotEqualTo(c);
    assertThat(a.equals(null)).isFalse();
    assertThat(a.equals(a.hex())).isFalse();
  }

  @Test
  void isThreadSafe() throws Exception {
    byte[] json = "{\"b\":[1,2,{\"d\":\"\\u00e9\",\"c\":0.5}],\"a\":null}".getBytes(UTF_8);
    Fingerprint expected = Fingerprint.ofJson(json);
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
    for (int t = 0; t < 4; t++) {
      Thread thread =
          new Thread(
              () -> {
                for (int i = 0; i < 2000; i++) {
                  if (!Fingerprint.ofJson(json).equals(expected)) {
                    failures.add(new AssertionError("mismatch at " + i));
                    return;
                  }
                }
              });
      threads.add(thread);
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
    assertThat(failures).isEmpty();
  }
}
