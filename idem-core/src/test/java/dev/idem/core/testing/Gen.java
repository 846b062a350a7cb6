package dev.idem.core.testing;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;

/** Small building blocks for generators of {@link Properties#forAll}. */
public final class Gen {

  /** Boundaries of {@code long}: zero and its neighbours, and both ends of the range. */
  public static final List<Long> LONG_EDGES =
      List.of(
          0L, 1L, -1L, 2L, -2L, Long.MIN_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE,
          Long.MAX_VALUE - 1);

  /** Boundaries of {@code int}: zero and its neighbours, and both ends of the range. */
  public static final List<Integer> INT_EDGES =
      List.of(
          0, 1, -1, 2, -2, Integer.MIN_VALUE, Integer.MIN_VALUE + 1, Integer.MAX_VALUE,
          Integer.MAX_VALUE - 1);

  private Gen() {}

  /**
   * Any {@code long}, with boundaries, small values and values of every bit length much more
   * likely than a uniform draw makes them.
   */
  public static long longs(SplittableRandom r) {
    return switch (weighted(r, 1, 2, 3, 4)) {
      case 0 -> LONG_EDGES.get(r.nextInt(LONG_EDGES.size()));
      case 1 -> r.nextLong(-1000, 1001);
      case 2 -> r.nextLong() >> r.nextInt(64); // any bit length, either sign
      default -> r.nextLong();
    };
  }

  /** Any {@code int}, distributed like {@link #longs}. */
  public static int ints(SplittableRandom r) {
    return switch (weighted(r, 1, 2, 3, 4)) {
      case 0 -> INT_EDGES.get(r.nextInt(INT_EDGES.size()));
      case 1 -> r.nextInt(-1000, 1001);
      case 2 -> r.nextInt() >> r.nextInt(32);
      default -> r.nextInt();
    };
  }

  /** A value in {@code [min, max]}, both included. */
  public static int between(SplittableRandom r, int min, int max) {
    return (int) r.nextLong(min, (long) max + 1);
  }

  /**
   * A value in {@code [min, max]}, both included: a random number of digits, then random digits,
   * so that short and long values are alike likely.
   */
  public static BigInteger between(SplittableRandom r, BigInteger min, BigInteger max) {
    BigInteger range = max.subtract(min).add(BigInteger.ONE);
    int bits = 1 + r.nextInt(range.bitLength());
    byte[] bytes = new byte[(bits + 7) / 8 + 1];
    r.nextBytes(bytes);
    BigInteger offset = new BigInteger(1, bytes).shiftRight(bytes.length * 8 - bits);
    return r.nextBoolean() ? min.add(offset.mod(range)) : max.subtract(offset.mod(range));
  }

  /** One of {@code values}, each alike likely. */
  @SafeVarargs
  public static <T> T oneOf(SplittableRandom r, T... values) {
    return values[r.nextInt(values.length)];
  }

  /** One of {@code values}, each alike likely. */
  public static <T> T oneOf(SplittableRandom r, List<T> values) {
    return values.get(r.nextInt(values.size()));
  }

  /** An index into {@code weights}, each drawn in proportion to its weight. */
  public static int weighted(SplittableRandom r, int... weights) {
    int total = 0;
    for (int w : weights) {
      total += w;
    }
    int pick = r.nextInt(total);
    for (int i = 0; i < weights.length; i++) {
      pick -= weights[i];
      if (pick < 0) {
        return i;
      }
    }
    throw new AssertionError("unreachable");
  }

  /** Between 0 and {@code maxSize} elements from {@code element}; empty and full lists included. */
  public static <T> List<T> listOf(
      SplittableRandom r, int maxSize, Function<SplittableRandom, ? extends T> element) {
    int size =
        switch (weighted(r, 1, 1, 8)) {
          case 0 -> 0;
          case 1 -> maxSize;
          default -> r.nextInt(maxSize + 1);
        };
    List<T> out = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      out.add(element.apply(r));
    }
    return out;
  }

  /** A string of between 0 and {@code maxLength} code points from {@code codePoint}. */
  public static String string(
      SplittableRandom r, int maxLength, Function<SplittableRandom, Integer> codePoint) {
    StringBuilder sb = new StringBuilder();
    for (int cp : listOf(r, maxLength, codePoint)) {
      sb.appendCodePoint(cp);
    }
    return sb.toString();
  }

  /** A string of between {@code min} and {@code max} characters drawn from {@code chars}. */
  public static String chars(SplittableRandom r, String chars, int min, int max) {
    int length = between(r, min, max);
    StringBuilder sb = new StringBuilder(length);
    for (int i = 0; i < length; i++) {
      sb.append(chars.charAt(r.nextInt(chars.length())));
    }
    return sb.toString();
  }
}
