package dev.idem.client.spring;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.RetryAfter;
import dev.idem.client.RetryBudget;
import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.OutcomeUnknownException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;

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

  /**
   * Whether a 422 of this content type can be the key-reused problem: the policy's own test on a
   * problem that has one of its types, so that the media type rule is the policy's, not a copy.
   */
  boolean mayBeKeyReused(@Nullable String contentType) {
    Iterator<String> types = policy.keyReusedProblemTypes().iterator();
    if (!types.hasNext()) {
      return false;
    }
    String type = types.next();
    byte[] probe = ("{\"type\":\"" + type.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}").getBytes(StandardCharsets.UTF_8);
    return policy.isKeyReused(422, contentType, probe);
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
   * The key of the {@code Idempotency-Key} field a caller set, read as an Idem server reads it: one
   * field (draft-ietf-httpapi-idempotency-key-header section 2.1 allows one), whose value is an
   * sf-string (RFC 8941 section 3.3.3: {@code \} escapes only {@code "} and {@code \}, nothing
   * after the closing quote) unquoted, or a bare value without {@code "}, {@code \}, {@code ,} or
   * space (those would make it ambiguous with the quoted form or with a list of combined field
   * lines). A field the server would refuse is refused here, before anything is sent.
   *
   * @param fieldValues the field's values, at least one
   * @throws InvalidIdempotencyKeyException if there is more than one field, the value is not well
   *     formed, or the key breaks {@link IdempotencyKey#of}'s rules
   */
  static IdempotencyKey keyOf(List<String> fieldValues) {
    if (fieldValues.size() != 1) {
      // combined (RFC 9110 section 5.3) they are one value with a ',' in it: rule "character"
      throw new InvalidIdempotencyKeyException("character", "the request carries " + fieldValues.size()
          + " Idempotency-Key fields; draft-ietf-httpapi-idempotency-key-header section 2.1 allows one");
    }
    String v = fieldValues.get(0).trim();
    if (v.startsWith("\"")) {
      StringBuilder out = new StringBuilder(v.length());
      int i = 1;
      for (; i < v.length() && v.charAt(i) != '"'; i++) {
        char c = v.charAt(i);
        if (c == '\\') {
          char next = i + 1 < v.length() ? v.charAt(++i) : ' ';
          if (next != '"' && next != '\\') {
            throw malformed("a backslash may only escape '\"' or '\\' (RFC 8941 section 3.3.3)");
          }
          c = next;
        }
        out.append(c);
      }
      if (i != v.length() - 1) {
        throw malformed(i >= v.length() ? "the quoted key has no closing '\"'" : "characters follow the closing '\"' (the field is one sf-string)");
      }
      return IdempotencyKey.of(out.toString());
    }
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c == '"' || c == '\\' || c == ',' || c == ' ') {
        throw malformed("an unquoted key must not contain '" + c + "' (index " + i + "); send it as a quoted string (RFC 8941 section 3.3.3)");
      }
    }
    return IdempotencyKey.of(v);
  }

  /**
   * Every value of the {@code Idempotency-Key} field, each as sent (not split at commas). Read with
   * {@code forEach}, whose signature Spring Framework 6.2 and 7 share ({@code get} takes an Object
   * on 6.2 and a String on 7, so a call compiled against one fails on the other).
   *
   * @return the values, empty when the field is absent
   */
  static List<String> keyFields(HttpHeaders headers) {
    List<String> values = new ArrayList<>(1);
    headers.forEach((name, fieldValues) -> {
      if (name.equalsIgnoreCase(KEY_HEADER)) {
        values.addAll(fieldValues);
      }
    });
    return values;
  }

  private static InvalidIdempotencyKeyException malformed(String why) {
    return new InvalidIdempotencyKeyException("character", "malformed Idempotency-Key field: " + why);
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
