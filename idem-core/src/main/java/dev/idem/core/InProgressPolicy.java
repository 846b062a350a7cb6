package dev.idem.core;

import java.time.Duration;
import java.util.Objects;

/**
 * What a duplicate does when it arrives while another attempt holds the claim (contract rule 5):
 * fail at once with {@link RequestInProgressException}, or wait a bounded time for the winner and
 * replay its response. It never gets a {@code null} or empty result. Immutable and thread-safe.
 */
public final class InProgressPolicy {

  private final Duration maxWait;

  private InProgressPolicy(Duration maxWait) {
    this.maxWait = maxWait;
  }

  /**
   * @return a policy that throws {@link RequestInProgressException} at once, with a retry-after hint
   *     of the holder's remaining lease (at least one second). HTTP maps it to 409 with {@code
   *     Retry-After}.
   */
  public static InProgressPolicy failFast() {
    return new InProgressPolicy(Duration.ZERO);
  }

  /**
   * @param maxWait how long to wait for the holder, positive, at most 10 minutes; polls start at 10
   *     ms and double up to 500 ms
   * @return a policy that waits and then replays the winner's response, or runs the operation if the
   *     winner released its claim; after {@code maxWait} it throws {@link RequestInProgressException}
   * @throws IllegalArgumentException if {@code maxWait} is not positive or longer than 10 minutes
   */
  public static InProgressPolicy waitUpTo(Duration maxWait) {
    Objects.requireNonNull(maxWait, "maxWait");
    if (maxWait.isZero() || maxWait.isNegative() || maxWait.compareTo(Duration.ofMinutes(10)) > 0) {
      throw new IllegalArgumentException("maxWait must be positive and at most 10 minutes, was " + maxWait);
    }
    return new InProgressPolicy(maxWait);
  }

  /** @return how long a duplicate waits; zero for fail-fast */
  public Duration maxWait() {
    return maxWait;
  }

  @Override
  public String toString() {
    return maxWait.isZero() ? "InProgressPolicy[failFast]" : "InProgressPolicy[waitUpTo " + maxWait + "]";
  }
}
