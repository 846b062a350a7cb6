package dev.idem.client.spring;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.RetryAfter;
import dev.idem.client.RetryBudget;
import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.OutcomeUnknownException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Set;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The retry decisions that the WebClient filter and the RestClient interceptor share, made the way
 * {@code IdempotentHttpClient} makes them: which answers are retried ({@link
 * ClientRetryPolicy#isRetryableAnswer}), the wait before a retry ({@code Retry-After}, RFC 9110
 * section 10.2.3, through {@link RetryAfter}, else {@link ClientRetryPolicy#backoff}), and whether a
 * retry may be made (attempts left, the next attempt starting before the deadline, a token from the
 * {@link RetryBudget}, in that order). Immutable; thread-safe as its budget is.
 */
final class RetryRules {

  private final ClientRetryPolicy policy;
  private final RetryBudget budget;
  private final Clock clock;
  private final DoubleSupplier random;

  RetryRules(ClientRetryPolicy policy, RetryBudget budget, Clock clock, DoubleSupplier random) {
    this.policy = policy;
    this.budget = budget;
    this.clock = clock;
    this.random = random;
  }

  ClientRetryPolicy policy() {
    return policy;
  }

  /** Records a new operation with the budget. @return its deadline: now plus the policy's maximum duration */
  Instant start() {
    budget.onOperation();
    return clock.instant().plus(policy.maxDuration());
  }

  /** @return the timeout of an attempt starting now (the policy's, shortened to the time left), or {@code null} past the deadline */
  @Nullable Duration attemptTimeout(Instant deadline) {
    Duration remaining = Duration.between(clock.instant(), deadline);
    if (remaining.isNegative() || remaining.isZero()) {
      return null;
    }
    return remaining.compareTo(policy.attemptTimeout()) < 0 ? remaining : policy.attemptTimeout();
  }

  /** @return whether an answer leaves the outcome unknown: a status of the policy's, not replayed */
  static boolean retryable(int status, @Nullable String replayedHeader) {
    return ClientRetryPolicy.isRetryableAnswer(status, replayedHeader != null && replayedHeader.trim().equalsIgnoreCase("true"));
  }

  /** @return the server's {@code Retry-After}, measured against its {@code Date}; {@code null} when absent or malformed */
  @Nullable Duration retryAfter(@Nullable String retryAfter, @Nullable String date) {
    return RetryAfter.parse(retryAfter, date, clock.instant()).orElse(null);
  }

  /** @return the wait before retry {@code attempt}: the server's {@code Retry-After}, else the jittered backoff */
  Duration delayAfter(int attempt, @Nullable Duration retryAfter) {
    return retryAfter != null ? retryAfter : policy.backoff(attempt, random.getAsDouble());
  }

  /**
   * Whether another attempt may follow attempt {@code attempt} after {@code delay}: attempts left,
   * the next one starting before the deadline, and a token from the budget (taken only when the
   * other two allow the retry).
   */
  boolean mayRetry(int attempt, Duration delay, Instant deadline) {
    if (attempt >= policy.maxAttempts()) {
      return false;
    }
    if (!clock.instant().plus(delay).isBefore(deadline)) {
      return false;
    }
    return budget.tryRetry();
  }

  /** @return the unknown outcome of an operation whose retries ran out, with why */
  OutcomeUnknownException exhausted(IdempotencyKey key, int sent, int lastStatus, @Nullable Throwable failure,
      @Nullable Duration retryAfter, Instant deadline, boolean notSent) {
    String reason;
    if (notSent) {
      reason = "the deadline passed";
    } else if (sent >= policy.maxAttempts()) {
      reason = "no attempts left";
    } else if (retryAfter != null && !clock.instant().plus(retryAfter).isBefore(deadline)) {
      reason = "the server asked to retry after " + retryAfter.toSeconds() + " s (Retry-After), past the deadline";
    } else {
      reason = "the retry budget or the deadline does not allow another attempt";
    }
    return OutcomeUnknownException.clientRetriesExhausted(key, sent, lastStatus, reason, failure, retryAfter, null);
  }

  /**
   * The key of an {@code Idempotency-Key} field value: an sf-string (RFC 8941 section 3.3.3, as
   * draft-ietf-httpapi-idempotency-key-header section 2 defines the field) unquoted, or a bare
   * value as it is.
   *
   * @throws dev.idem.core.InvalidIdempotencyKeyException if the key breaks {@link IdempotencyKey#of}'s rules
   */
  static IdempotencyKey keyOf(String fieldValue) {
    String v = fieldValue.trim();
    if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) {
      StringBuilder out = new StringBuilder(v.length());
      for (int i = 1; i < v.length() - 1; i++) {
        char c = v.charAt(i);
        if (c == '\\' && i + 1 < v.length() - 1) {
          c = v.charAt(++i);
        }
        out.append(c);
      }
      v = out.toString();
    }
    return IdempotencyKey.of(v);
  }

  /** @return the key as an sf-string, as {@code IdempotentHttpClient} sends it */
  static String fieldValue(IdempotencyKey key) {
    return "\"" + key.value().replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** @return the methods given, upper-cased; at least one */
  static Set<String> methods(Set<String> methods) {
    if (methods.isEmpty()) {
      throw new IllegalArgumentException("at least one method");
    }
    return methods.stream().map(m -> m.toUpperCase(Locale.ROOT)).collect(java.util.stream.Collectors.toUnmodifiableSet());
  }

  /** The methods keyed and retried by default: those that change state (RFC 9110 section 9.2.1 calls the others safe). */
  static final Set<String> DEFAULT_METHODS = Set.of("POST", "PUT", "PATCH", "DELETE");

  static final String KEY_HEADER = IdempotencyHeaders.KEY;
  static final String REPLAYED_HEADER = IdempotencyHeaders.REPLAYED;
  static final String RETRY_AFTER_HEADER = IdempotencyHeaders.RETRY_AFTER;
}
