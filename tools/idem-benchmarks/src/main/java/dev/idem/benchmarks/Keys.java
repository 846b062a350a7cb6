package dev.idem.benchmarks;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.random.RandomGenerator;

/**
 * Idempotency keys as clients make them: random UUIDv4 (RFC 9562 §5.4) or time-ordered UUIDv7
 * (RFC 9562 §5.7: 48-bit Unix milliseconds, then random bits). Stateless and thread-safe.
 */
public final class Keys {

  /** The two key shapes the harness compares. */
  public enum Shape {
    UUID_V4("uuidv4"),
    UUID_V7("uuidv7");

    private final String label;

    Shape(String label) {
      this.label = label;
    }

    /** @return {@code uuidv4} or {@code uuidv7}, as in the report and the CSV files */
    public String label() {
      return label;
    }
  }

  private Keys() {}

  /** @return a random version-4 UUID string from {@code random} (not SecureRandom: no contention) */
  public static String v4(RandomGenerator random) {
    return v4(random.nextLong(), random.nextLong());
  }

  /** @return the version-4 UUID string with these random bits (version and variant set) */
  public static String v4(long msb, long lsb) {
    long m = (msb & 0xFFFF_FFFF_FFFF_0FFFL) | 0x0000_0000_0000_4000L;
    long l = (lsb & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
    return new UUID(m, l).toString();
  }

  /** @return a version-7 UUID string for the current time, with random low bits */
  public static String v7(RandomGenerator random) {
    return v7(System.currentTimeMillis(), random.nextInt(4096), random.nextLong());
  }

  /**
   * @param unixMillis the 48-bit timestamp
   * @param randA12 12 bits placed right after the version (used as a counter by the preload)
   * @param randB 62 random bits
   * @return the version-7 UUID string
   */
  public static String v7(long unixMillis, int randA12, long randB) {
    long m = (unixMillis << 16) | 0x7000L | (randA12 & 0xFFF);
    long l = (randB & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
    return new UUID(m, l).toString();
  }

  /** @return a new key of the given shape */
  public static String next(Shape shape, RandomGenerator random) {
    return shape == Shape.UUID_V7 ? v7(random) : v4(random);
  }

  /**
   * Keys for a bulk load, in ascending order so that every store loads them into its primary-key
   * B-tree sequentially: v4 keys are sorted after generation; v7 keys are generated ascending, with
   * timestamps ending a minute before now (so new keys made during the run sort after them).
   *
   * @param count how many
   * @param seed the random seed (loads are reproducible)
   */
  public static String[] preload(Shape shape, int count, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    String[] keys = new String[count];
    if (shape == Shape.UUID_V4) {
      for (int i = 0; i < count; i++) {
        keys[i] = v4(random.nextLong(), random.nextLong());
      }
      Arrays.sort(keys);
    } else {
      long start = System.currentTimeMillis() - 60_000L - count / 4096 - 1;
      for (int i = 0; i < count; i++) {
        keys[i] = v7(start + i / 4096, i % 4096, random.nextLong());
      }
    }
    return keys;
  }
}
