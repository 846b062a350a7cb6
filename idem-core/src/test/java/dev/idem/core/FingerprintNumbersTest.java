package dev.idem.core;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.idem.core.internal.JsonCanonicalizer;
import dev.idem.core.testing.Gen;
import dev.idem.core.testing.Properties;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.ToIntFunction;
import org.junit.jupiter.api.Test;

/**
 * Numbers in JSON fingerprints compare by exact decimal value: equal values in any spelling give
 * one fingerprint, and different values never do, at any magnitude or precision.
 */
class FingerprintNumbersTest {

  private static final BigInteger TWO_53 = BigInteger.ONE.shiftLeft(53);
  private static final BigInteger TWO_63 = BigInteger.ONE.shiftLeft(63);
  private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

  // ---- generators, shared with FingerprintPropertiesTest ---------------------------------------

  private static final BigInteger TEN_60 = BigInteger.TEN.pow(60);

  /**
   * Decimal values where a double-based canonical form goes wrong: integers around 2^53, 2^63 and
   * 2^64, long decimals, exact expansions of doubles, exponents far past the double range, zeros of
   * any scale; and ordinary small numbers.
   */
  static BigDecimal decimal(SplittableRandom r) {
    return switch (Gen.weighted(r, 3, 2, 2, 3, 2, 2, 1)) {
      case 0 -> BigDecimal.valueOf(Gen.between(r, -1000, 1000));
      case 1 -> BigDecimal.valueOf(Gen.longs(r));
      case 2 -> {
        BigInteger b =
            Gen.oneOf(r, TWO_53, TWO_63, TWO_64).add(BigInteger.valueOf(Gen.between(r, -2000, 2000)));
        yield new BigDecimal(r.nextBoolean() ? b : b.negate());
      }
      case 3 -> {
        double d = Double.NaN;
        while (!Double.isFinite(d)) {
          d = Double.longBitsToDouble(Gen.longs(r));
        }
        yield r.nextBoolean() ? new BigDecimal(Double.toString(d)) : new BigDecimal(d);
      }
      case 4 -> new BigDecimal(Gen.between(r, TEN_60.negate(), TEN_60), Gen.between(r, -40, 60));
      case 5 -> {
        int scale =
            switch (r.nextInt(3)) {
              case 0 -> Gen.between(r, 400, 1000);
              case 1 -> Gen.between(r, 999_998_000, 999_999_000);
              default -> Gen.between(r, 400, 999_999_000);
            };
        yield new BigDecimal(BigInteger.valueOf(Gen.longs(r)), r.nextBoolean() ? scale : -scale);
      }
      default -> BigDecimal.ZERO.setScale(Gen.between(r, -50, 50));
    };
  }

  /** The boundaries of each kind of value {@link #decimal} draws, to check every run. */
  static final List<BigDecimal> DECIMAL_EDGES = decimalEdges();

  private static List<BigDecimal> decimalEdges() {
    Set<BigDecimal> edges = new LinkedHashSet<>(); // BigDecimal.equals tells scales apart
    for (int small : new int[] {0, 1, -1, 2, -2, 999, -999, 1000, -1000}) {
      edges.add(BigDecimal.valueOf(small));
    }
    for (long l : Gen.LONG_EDGES) {
      edges.add(BigDecimal.valueOf(l));
    }
    for (BigInteger p : List.of(TWO_53, TWO_63, TWO_64)) {
      for (int d : new int[] {-2000, -1, 0, 1, 2000}) {
        BigInteger b = p.add(BigInteger.valueOf(d));
        edges.add(new BigDecimal(b));
        edges.add(new BigDecimal(b.negate()));
      }
    }
    List<Double> doubles = new ArrayList<>();
    for (long bits : Gen.LONG_EDGES) {
      doubles.add(Double.longBitsToDouble(bits));
    }
    doubles.addAll(
        List.of(
            Double.MIN_VALUE, -Double.MIN_VALUE, Double.MIN_NORMAL, Double.MAX_VALUE,
            -Double.MAX_VALUE, 0.1, -0.0, 0.3, 1e21, 1e-7, 9007199254740993.0));
    for (double d : doubles) {
      if (Double.isFinite(d)) {
        edges.add(new BigDecimal(Double.toString(d)));
        edges.add(new BigDecimal(d));
      }
    }
    for (BigInteger u : List.of(TEN_60.negate(), BigInteger.ONE.negate(), BigInteger.ZERO,
        BigInteger.ONE, TEN_60)) {
      for (int scale : new int[] {-40, 0, 60}) {
        edges.add(new BigDecimal(u, scale));
      }
    }
    for (long u : new long[] {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE}) {
      for (int scale : new int[] {400, -400, 999_999_000, -999_999_000}) {
        edges.add(new BigDecimal(BigInteger.valueOf(u), scale));
      }
    }
    for (int scale : new int[] {-50, -1, 0, 1, 50}) {
      edges.add(BigDecimal.ZERO.setScale(scale));
    }
    return List.copyOf(edges);
  }

  /**
   * For each {@code k} below {@code n}, the smallest seed whose {@link Random} answers {@code k}
   * to {@code firstChoice}: seeds that make every branch of a spelling or a mutation an edge case.
   */
  static List<Long> seedsCovering(int n, ToIntFunction<Random> firstChoice) {
    Long[] seeds = new Long[n];
    int found = 0;
    for (long seed = 0; found < n; seed++) {
      int k = firstChoice.applyAsInt(new Random(seed));
      if (seeds[k] == null) {
        seeds[k] = seed;
        found++;
      }
    }
    return List.of(seeds);
  }

  /** Seeds that start {@link #spelling} on each of its eight cases. */
  static final List<Long> SPELLING_SEEDS =
      seedsCovering(
          8,
          r -> {
            r.nextBoolean();
            return r.nextInt(8);
          });

  /** Seeds that start {@link #neighbour} on each of its cases. */
  static final List<Long> NEIGHBOUR_SEEDS = seedsCovering(4, r -> r.nextInt(4));

  /** One of many JSON spellings of {@code v}, all denoting exactly {@code v}. */
  static String spelling(BigDecimal v, Random r) {
    BigInteger u = v.unscaledValue();
    String sign = u.signum() < 0 ? "-" : "";
    String digits = u.abs().toString();
    long exponent = -(long) v.scale(); // v = u * 10^exponent
    String e = r.nextBoolean() ? "e" : "E";
    switch (r.nextInt(8)) {
      case 0:
        return v.toString();
      case 1:
        return Math.abs(v.scale()) <= 400 ? v.toPlainString() : v.toString();
      case 2: // unscaled digits and an exponent: 15e-1
        return u + e + (exponent >= 0 && r.nextBoolean() ? "+" : "") + exponent;
      case 3: // trailing zeros: 1.500
        BigDecimal padded = v.setScale(v.scale() + 1 + r.nextInt(3));
        return r.nextBoolean() ? padded.toString() : spelling(padded, new Random(r.nextLong()));
      case 4: // leading zeros after the point: 0.00015e4
        int z = r.nextInt(4);
        return sign + "0." + "0".repeat(z) + digits + e + (exponent + z + digits.length());
      case 5: // one digit before the point: 1.5E0
        String mantissa =
            digits.length() > 1 ? digits.charAt(0) + "." + digits.substring(1) : digits;
        return sign + mantissa + e + (exponent + digits.length() - 1);
      case 6: // trailing zeros in the integer part: 1500e-3 (not for 0: no leading zeros)
        if (u.signum() == 0) {
          return v.toString();
        }
        int t = 1 + r.nextInt(3);
        return sign + digits + "0".repeat(t) + e + (exponent - t);
      default: // zero: signs and exponents do not matter
        if (v.signum() == 0) {
          return new String[] {"-0", "-0.0e7", "0.000E-99", "-0e+0", "0"}[r.nextInt(5)];
        }
        return v.toString();
    }
  }

  /** A value close to {@code v} but different: one unit more or less in some late digit. */
  static BigDecimal neighbour(BigDecimal v, Random r) {
    switch (r.nextInt(4)) {
      case 0:
        if (v.signum() != 0) {
          return v.negate();
        }
        return BigDecimal.ONE;
      case 1:
        if (v.signum() != 0) {
          return v.scaleByPowerOfTen(1 + r.nextInt(3));
        }
        return BigDecimal.ONE.scaleByPowerOfTen(-r.nextInt(1000));
      default:
        BigDecimal unit = BigDecimal.ONE.scaleByPowerOfTen(-(v.scale() + r.nextInt(6)));
        return r.nextBoolean() ? v.add(unit) : v.subtract(unit);
    }
  }

  /** The canonical text of {@code v}, computed independently with {@link BigDecimal}. */
  static String reference(BigDecimal v) {
    if (v.signum() == 0) {
      return "0";
    }
    BigDecimal s = v.stripTrailingZeros();
    String d = s.unscaledValue().abs().toString();
    int k = d.length();
    long n = k - (long) s.scale();
    StringBuilder out = new StringBuilder(v.signum() < 0 ? "-" : "");
    if (k <= n && n <= 21) {
      out.append(d).append("0".repeat((int) (n - k)));
    } else if (0 < n && n <= 21) {
      out.append(d, 0, (int) n).append('.').append(d, (int) n, k);
    } else if (-6 < n && n <= 0) {
      out.append("0.").append("0".repeat((int) -n)).append(d);
    } else {
      out.append(d.charAt(0));
      if (k > 1) {
        out.append('.').append(d, 1, k);
      }
      out.append('e').append(n - 1 < 0 ? "-" : "+").append(Math.abs(n - 1));
    }
    return out.toString();
  }

  private static String canon(String json) {
    return new String(JsonCanonicalizer.canonicalize(json.getBytes(UTF_8)), UTF_8);
  }

  private static Fingerprint account(String number) {
    return Fingerprint.ofJson(("{\"title\":\"big\",\"account\":" + number + "}").getBytes(UTF_8));
  }

  // ---- properties ------------------------------------------------------------------------------

  /** A value and the seed of the {@link Random} that spells it. */
  record Spelled(BigDecimal value, long seed) {}

  /** Two values and the seed of the {@link Random} that spells them. */
  record Pair(BigDecimal a, BigDecimal b, long seed) {}

  private static Spelled spelled(SplittableRandom r) {
    return new Spelled(decimal(r), r.nextLong());
  }

  /** Every edge value with each of {@code seeds}. */
  private static List<Spelled> edges(List<Long> seeds) {
    List<Spelled> out = new ArrayList<>();
    for (BigDecimal v : DECIMAL_EDGES) {
      for (long seed : seeds) {
        out.add(new Spelled(v, seed));
      }
    }
    return out;
  }

  @Test
  void theCanonicalFormIsTheExactValue() {
    Properties.forAll(
        "theCanonicalFormIsTheExactValue",
        3000,
        FingerprintNumbersTest::spelled,
        edges(SPELLING_SEEDS),
        c -> {
          String spelled = spelling(c.value(), new Random(c.seed()));
          String canonical = canon(spelled);
          assertThat(canonical).as(spelled).isEqualTo(reference(c.value()));
          assertThat(new BigDecimal(canonical)).as(spelled).isEqualByComparingTo(c.value());
        });
  }

  @Test
  void equalValuesInAnySpellingHaveEqualFingerprints() {
    Properties.forAll(
        "equalValuesInAnySpellingHaveEqualFingerprints",
        3000,
        FingerprintNumbersTest::spelled,
        edges(SPELLING_SEEDS),
        c -> {
          Random random = new Random(c.seed());
          String a = spelling(c.value(), random);
          String b = spelling(c.value(), random);
          assertThat(account(b)).as("%s vs %s", a, b).isEqualTo(account(a));
        });
  }

  @Test
  void differentValuesHaveDifferentFingerprints() {
    // every two edge values, each spelled by some case of spelling()
    List<Pair> edges = new ArrayList<>();
    for (int i = 0; i < DECIMAL_EDGES.size(); i++) {
      for (int j = i + 1; j < DECIMAL_EDGES.size(); j++) {
        long seed = SPELLING_SEEDS.get((i + j) % SPELLING_SEEDS.size());
        edges.add(new Pair(DECIMAL_EDGES.get(i), DECIMAL_EDGES.get(j), seed));
      }
    }
    Properties.forAll(
        "differentValuesHaveDifferentFingerprints",
        3000,
        r -> new Pair(decimal(r), decimal(r), r.nextLong()),
        edges,
        c -> {
          Properties.assume(c.a().compareTo(c.b()) != 0);
          Random random = new Random(c.seed());
          assertThat(account(spelling(c.b(), random)))
              .isNotEqualTo(account(spelling(c.a(), random)));
        });
  }

  @Test
  void nearbyValuesHaveDifferentFingerprints() {
    Properties.forAll(
        "nearbyValuesHaveDifferentFingerprints",
        3000,
        FingerprintNumbersTest::spelled,
        edges(NEIGHBOUR_SEEDS),
        c -> {
          Random random = new Random(c.seed());
          BigDecimal w = neighbour(c.value(), random);
          Properties.assume(w.compareTo(c.value()) != 0);
          String a = spelling(c.value(), random);
          String b = spelling(w, random);
          assertThat(account(b)).as("%s vs %s", a, b).isNotEqualTo(account(a));
        });
  }

  // ---- regressions: issue inputs and their neighbours -------------------------------------------

  @Test
  void bigIntegersBeyondDoublePrecisionAreDifferentFingerprints() {
    assertThat(account("1234567890123456789")).isNotEqualTo(account("1234567890123456700"));
    assertThat(canon("{\"title\":\"big\",\"account\":1234567890123456789}"))
        .isEqualTo("{\"account\":1234567890123456789,\"title\":\"big\"}");
  }

  @Test
  void integersAroundTwoToThe53And63AreDifferentFingerprints() {
    for (BigInteger power : List.of(TWO_53, TWO_63, TWO_64)) {
      Set<Fingerprint> seen = new HashSet<>();
      for (int offset = -3; offset <= 3; offset++) {
        BigInteger n = power.add(BigInteger.valueOf(offset));
        assertThat(seen.add(account(n.toString()))).as("%s", n).isTrue();
        assertThat(seen.add(account(n.negate().toString()))).as("-%s", n).isTrue();
        assertThat(account(n + ".0")).isEqualTo(account(n.toString()));
      }
    }
    assertThat(account("9223372036854775807")).isNotEqualTo(account("9223372036854775808"));
  }

  @Test
  void longDecimalsAreDifferentFingerprints() {
    List<String> values =
        List.of(
            "0.1",
            "0.10000000000000001",
            "0.1000000000000000055511151231257827021181583404541015625", // the double 0.1
            "0.30000000000000004",
            "0.3000000000000000444089209850062616169452667236328125",
            "3.141592653589793238462643383279502884197",
            "3.141592653589793238462643383279502884198");
    Set<Fingerprint> seen = new HashSet<>();
    for (String v : values) {
      assertThat(seen.add(account(v))).as(v).isTrue();
    }
  }

  @Test
  void exponentsPastTheDoubleRangeAreAcceptedAndDifferentFingerprints() {
    List<String> values =
        List.of(
            "1e400",
            "1e401",
            "2e400",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "1e-400",
            "1e-401",
            "0",
            "4.9406564584124654e-324",
            "5e-324",
            "1e999999999",
            "1e999999998",
            "-1e999999999",
            "1e-999999999");
    Set<Fingerprint> seen = new HashSet<>();
    for (String v : values) {
      assertThat(seen.add(account(v))).as(v).isTrue();
    }
    assertThat(account("1e400")).isEqualTo(account("10E399")).isEqualTo(account("0.1e401"));
    assertThat(account("1e-400")).isEqualTo(account("100e-402"));
  }

  @Test
  void equalNumbersInAnySpellingAreEqualFingerprints() {
    for (String one : List.of("1.0", "1e0", "10E-1", "100e-2", "0.1e1", "1.000E+0", "0.001e3")) {
      assertThat(account(one)).as(one).isEqualTo(account("1"));
    }
    for (String zero : List.of("-0", "0.0", "-0.0e5", "0e-999999999999", "-0.000E+7")) {
      assertThat(account(zero)).as(zero).isEqualTo(account("0"));
    }
  }

  @Test
  void hugeExponentsAndLongNumbersAreAcceptedWithoutBlowUp() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(20),
        () -> {
          assertThat(canon("1e999999999")).isEqualTo("1e+999999999");
          assertThat(canon("-9.99e-999999997")).isEqualTo("-9.99e-999999997");
          String digits = "7".repeat(200_000);
          assertThat(canon(digits + "e999000000")).startsWith("7.777").endsWith("e+999199999");
          assertThat(canon("0." + "0".repeat(200_000) + "1")).isEqualTo("1e-200001");
        });
  }

  @Test
  void exponentsBeyondTheLimitAreRefusedWhateverTheSpelling() {
    for (String v : List.of("1e1000000000", "0.1e1000000001", "10e999999999", "1e-1000000000")) {
      assertThatThrownBy(() -> account(v))
          .as(v)
          .isInstanceOf(InvalidPayloadException.class)
          .hasMessageContaining("number out of range");
    }
  }

  @Test
  void everyCaseOfTheLayoutIsCovered() {
    List<String> inputs = new ArrayList<>();
    for (int e = -30; e <= 30; e++) {
      inputs.add("123e" + e);
      inputs.add("-1e" + e);
    }
    for (String in : inputs) {
      assertThat(canon(in)).as(in).isEqualTo(reference(new BigDecimal(in)));
    }
  }
}
