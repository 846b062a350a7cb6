package dev.idem.core.testing;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;

/**
 * Property tests on plain JUnit 5: a property is checked on fixed edge cases, then on generated
 * cases from a seed. A failure names the property, the seed and the case; setting the system
 * property {@value #SEED_PROPERTY} to that seed generates the same cases again.
 */
public final class Properties {

  /** The system property that fixes the seed; without it each property draws a random seed. */
  public static final String SEED_PROPERTY = "idem.seed";

  /** Generated cases whose assumption does not hold, at most, per case that must be checked. */
  static final int MAX_REJECTIONS_PER_CASE = 5;

  /** A property of one value: returns normally when it holds, throws when it does not. */
  @FunctionalInterface
  public interface ThrowingConsumer<T> {
    void accept(T value) throws Throwable;
  }

  /** How many cases a run checked and rejected. */
  record Run(long seed, int edgeCasesChecked, int generatedChecked, int rejected) {}

  private Properties() {}

  /**
   * Checks {@code property} on every one of {@code edgeCases}, then on {@code cases} values drawn
   * from {@code generator} (cases rejected by {@link #assume} do not count towards them).
   *
   * @throws AssertionError on the first case where the property fails, with the property's name,
   *     the seed, the case and its value in the message, and the failure as its cause
   */
  public static <T> void forAll(
      String name,
      int cases,
      Function<SplittableRandom, ? extends T> generator,
      List<? extends T> edgeCases,
      ThrowingConsumer<? super T> property) {
    run(name, seed(), cases, generator, edgeCases, property);
  }

  /** Skips the current case unless {@code condition} holds; for use inside a property only. */
  public static void assume(boolean condition) {
    if (!condition) {
      throw Rejected.INSTANCE;
    }
  }

  /** The seed from {@value #SEED_PROPERTY}, or a random one. */
  static long seed() {
    String fixed = System.getProperty(SEED_PROPERTY);
    if (fixed == null || fixed.isBlank()) {
      return ThreadLocalRandom.current().nextLong();
    }
    try {
      return Long.parseLong(fixed.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "-D" + SEED_PROPERTY + " must be a long, not \"" + fixed + "\"", e);
    }
  }

  static <T> Run run(
      String name,
      long seed,
      int cases,
      Function<SplittableRandom, ? extends T> generator,
      List<? extends T> edgeCases,
      ThrowingConsumer<? super T> property) {
    if (cases < 0) {
      throw new IllegalArgumentException("cases must not be negative: " + cases);
    }
    int edgeChecked = 0;
    int rejected = 0;
    for (int i = 0; i < edgeCases.size(); i++) {
      T value = edgeCases.get(i);
      try {
        if (check(property, value)) {
          edgeChecked++;
        } else {
          rejected++;
        }
      } catch (Failure f) {
        throw failure(
            name,
            String.format("edge case %d of %d (fixed, whatever the seed)", i, edgeCases.size()),
            seed,
            value,
            f.getCause());
      }
    }
    SplittableRandom random = new SplittableRandom(seed);
    int checked = 0;
    int attempts = 0;
    long maxAttempts = (long) cases * (1 + MAX_REJECTIONS_PER_CASE);
    while (checked < cases) {
      if (attempts >= maxAttempts) {
        throw new AssertionError(
            String.format(
                "property %s: too many cases rejected by assume(): %d checked of %d after %d"
                    + " generated (seed %d)",
                name, checked, cases, attempts, seed));
      }
      int index = attempts++;
      T value;
      try {
        value = generator.apply(random.split());
      } catch (RuntimeException | Error e) {
        throw new AssertionError(
            String.format(
                "property %s: the generator failed on generated case %d (seed %d; reproduce with"
                    + " -D%s=%d)",
                name, index, seed, SEED_PROPERTY, seed),
            e);
      }
      try {
        if (check(property, value)) {
          checked++;
        } else {
          rejected++;
        }
      } catch (Failure f) {
        throw failure(
            name,
            String.format("generated case %d (%d checked before it)", index, edgeChecked + checked),
            seed,
            value,
            f.getCause());
      }
    }
    return new Run(seed, edgeChecked, checked, rejected);
  }

  /** Whether the property held ({@code false}: rejected); a failure is thrown as {@link Failure}. */
  private static <T> boolean check(ThrowingConsumer<? super T> property, T value) {
    try {
      property.accept(value);
      return true;
    } catch (Rejected r) {
      return false;
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable t) {
      throw new Failure(t);
    }
  }

  private static AssertionError failure(
      String name, String where, long seed, Object value, Throwable cause) {
    String message = String.valueOf(cause.getMessage()).strip().replace("\n", "\n  ");
    return new AssertionError(
        String.format(
            "property %s failed on %s, seed %d (reproduce with -D%s=%d)\nvalue: %s\ncause: %s:\n  %s",
            name, where, seed, SEED_PROPERTY, seed, describe(value), cause.getClass().getName(),
            message),
        cause);
  }

  /**
   * A readable form of a case: arrays element by element, and characters that would not print
   * (controls, surrogates, non-characters, anything outside printable ASCII) as {@code \}{@code
   * uXXXX} escapes.
   */
  public static String describe(Object value) {
    String text;
    if (value instanceof byte[] b) {
      text = Arrays.toString(b);
    } else if (value instanceof Object[] a) {
      text = Arrays.deepToString(a);
    } else {
      text = String.valueOf(value);
    }
    StringBuilder out = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c >= 0x20 && c < 0x7F) {
        out.append(c);
      } else {
        out.append(String.format("\\u%04x", (int) c));
      }
    }
    return out.toString();
  }

  /** Thrown by {@link #assume} to skip a case. */
  private static final class Rejected extends RuntimeException {
    static final Rejected INSTANCE = new Rejected();

    private Rejected() {
      super("case rejected by assume()", null, false, false);
    }
  }

  /** A property's failure on one case, carried to where the case is known. */
  private static final class Failure extends RuntimeException {
    Failure(Throwable cause) {
      super(cause);
    }
  }
}
