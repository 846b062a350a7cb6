package dev.idem.client;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;

/**
 * When and how often {@link IdempotentHttpClient} retries one operation. Immutable and thread-safe.
 *
 * <ul>
 *   <li>Bounds: at most {@link #maxAttempts()} attempts and {@link #maxDuration()} in all, counted
 *       from the first attempt; no attempt starts after that deadline.
 *   <li>Backoff: exponential with full jitter: before retry {@code n} (1-based) the client waits a
 *       uniformly random time in {@code [0, min(maxDelay, baseDelay * 2^(n-1))]}. A {@code
 *       Retry-After} from the server (RFC 9110 section 10.2.3) replaces the backoff.
 *   <li>Retried: I/O errors, timeouts and lost responses; 429, 502, 503, 504; and 409 with a {@code
 *       Retry-After} (the draft's "request in progress"; a 409 without it is a final answer).
 *   <li>Never retried: 422 (the key was reused with another payload: {@link
 *       dev.idem.core.IdempotencyKeyReusedException}) and every other status.
 * </ul>
 */
public final class ClientRetryPolicy {

  /** Statuses retried whatever their headers. */
  public static final Set<Integer> RETRIED_STATUSES = Set.of(429, 502, 503, 504);

  private final int maxAttempts;
  private final Duration maxDuration;
  private final Duration baseDelay;
  private final Duration maxDelay;
  private final Duration attemptTimeout;

  private ClientRetryPolicy(Builder b) {
    this.maxAttempts = b.maxAttempts;
    this.maxDuration = b.maxDuration;
    this.baseDelay = b.baseDelay;
    this.maxDelay = b.maxDelay;
    this.attemptTimeout = b.attemptTimeout;
  }

  /** @return a builder with 4 attempts, 30 s in all, delays from 100 ms up to 5 s, 10 s per attempt */
  public static Builder builder() {
    return new Builder();
  }

  /** @return the default policy of {@link #builder()} */
  public static ClientRetryPolicy defaults() {
    return builder().build();
  }

  /** @return the most attempts, first one included */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** @return the most time for all attempts and waits together */
  public Duration maxDuration() {
    return maxDuration;
  }

  /** @return the backoff before the first retry, before jitter */
  public Duration baseDelay() {
    return baseDelay;
  }

  /** @return the cap of the backoff, before jitter */
  public Duration maxDelay() {
    return maxDelay;
  }

  /** @return how long one attempt may take before it counts as timed out */
  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  /**
   * The full-jitter backoff before retry {@code retry}.
   *
   * @param retry the retry number, 1 for the wait after the first attempt
   * @param random a uniform random number in {@code [0, 1)}
   * @return a delay in {@code [0, min(maxDelay, baseDelay * 2^(retry-1))]}
   * @throws IllegalArgumentException if {@code retry < 1} or {@code random} is outside {@code [0, 1)}
   */
  public Duration backoff(int retry, double random) {
    if (retry < 1) {
      throw new IllegalArgumentException("retry must be at least 1, was " + retry);
    }
    if (!(random >= 0 && random < 1)) {
      throw new IllegalArgumentException("random must be in [0, 1), was " + random);
    }
    long base = baseDelay.toNanos();
    long ceiling = maxDelay.toNanos();
    int shift = Math.min(retry - 1, 62);
    long exponential = base > (ceiling >> shift) ? ceiling : Math.min(ceiling, base << shift);
    return Duration.ofNanos((long) (exponential * random));
  }

  /**
   * @param status an HTTP status
   * @param hasRetryAfter whether the response carries {@code Retry-After}
   * @return whether the status is worth another attempt
   */
  public static boolean isRetryable(int status, boolean hasRetryAfter) {
    return RETRIED_STATUSES.contains(status) || (status == 409 && hasRetryAfter);
  }

  @Override
  public String toString() {
    return "ClientRetryPolicy[maxAttempts=" + maxAttempts + ", maxDuration=" + maxDuration + ", baseDelay=" + baseDelay
        + ", maxDelay=" + maxDelay + ", attemptTimeout=" + attemptTimeout + "]";
  }

  /** Builds a {@link ClientRetryPolicy}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private int maxAttempts = 4;
    private Duration maxDuration = Duration.ofSeconds(30);
    private Duration baseDelay = Duration.ofMillis(100);
    private Duration maxDelay = Duration.ofSeconds(5);
    private Duration attemptTimeout = Duration.ofSeconds(10);

    private Builder() {}

    /** @param maxAttempts 1 to 100, the first attempt included */
    public Builder maxAttempts(int maxAttempts) {
      if (maxAttempts < 1 || maxAttempts > 100) {
        throw new IllegalArgumentException("maxAttempts must be between 1 and 100, was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** @param maxDuration positive, at most 24 hours */
    public Builder maxDuration(Duration maxDuration) {
      this.maxDuration = positive("maxDuration", maxDuration, Duration.ofHours(24));
      return this;
    }

    /** @param baseDelay positive, at most 1 hour */
    public Builder baseDelay(Duration baseDelay) {
      this.baseDelay = positive("baseDelay", baseDelay, Duration.ofHours(1));
      return this;
    }

    /** @param maxDelay positive, at most 1 hour; checked against baseDelay by {@link #build()} */
    public Builder maxDelay(Duration maxDelay) {
      this.maxDelay = positive("maxDelay", maxDelay, Duration.ofHours(1));
      return this;
    }

    /** @param attemptTimeout positive, at most 1 hour */
    public Builder attemptTimeout(Duration attemptTimeout) {
      this.attemptTimeout = positive("attemptTimeout", attemptTimeout, Duration.ofHours(1));
      return this;
    }

    /**
     * @return the policy
     * @throws IllegalArgumentException if maxDelay is shorter than baseDelay
     */
    public ClientRetryPolicy build() {
      if (maxDelay.compareTo(baseDelay) < 0) {
        throw new IllegalArgumentException("maxDelay (" + maxDelay + ") must not be shorter than baseDelay (" + baseDelay + ")");
      }
      return new ClientRetryPolicy(this);
    }

    private static Duration positive(String name, Duration d, Duration max) {
      Objects.requireNonNull(d, name);
      if (d.isZero() || d.isNegative() || d.compareTo(max) > 0) {
        throw new IllegalArgumentException(name + " must be positive and at most " + max + ", was " + d);
      }
      return d;
    }
  }
}
