package dev.idem.check;

import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * The result of one check. Immutable and thread-safe.
 *
 * @param name which check; never {@code null}
 * @param verdict its verdict; never {@code null}
 * @param sends how many requests the check sent to the API (counting queries not included)
 * @param answers what the API answered, in short, for example {@code 201 (lost), 201 replayed};
 *     never {@code null}, empty if nothing was sent
 * @param effects how many effects the check's requests left, counted as {@link
 *     CheckReport#counting()} says; empty where the check does not count or cannot tell; never
 *     {@code null}
 * @param detail why the verdict, in one or two sentences; never {@code null}
 * @param duration how long the check took; never {@code null}
 */
public record CheckResult(
    CheckName name, Verdict verdict, int sends, String answers, OptionalLong effects, String detail, Duration duration) {

  /**
   * Checks the components.
   *
   * @throws NullPointerException if a component other than {@code sends} is {@code null}
   * @throws IllegalArgumentException if {@code sends} is negative
   */
  public CheckResult {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(verdict, "verdict");
    Objects.requireNonNull(answers, "answers");
    Objects.requireNonNull(effects, "effects");
    Objects.requireNonNull(detail, "detail");
    Objects.requireNonNull(duration, "duration");
    if (sends < 0) {
      throw new IllegalArgumentException("sends must not be negative, was " + sends);
    }
  }
}
