package dev.idem.client;

import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;

/**
 * Parses the {@code Retry-After} response header field (RFC 9110 section 10.2.3): either a number
 * of seconds ({@code delay-seconds}) or an HTTP-date (IMF-fixdate, RFC 9110 section 5.6.7, for
 * example {@code Sun, 06 Nov 1994 08:49:37 GMT}). Stateless and thread-safe.
 */
public final class RetryAfter {

  private RetryAfter() {}

  /**
   * @param value the field value, may be {@code null}
   * @param now the current time, to turn a date into a delay
   * @return the delay, never negative (a date in the past gives zero); empty when the value is
   *     absent or malformed (a malformed value is ignored, as RFC 9110 lets a recipient do)
   */
  public static Optional<Duration> parse(String value, Instant now) {
    if (value == null) {
      return Optional.empty();
    }
    String v = value.trim();
    if (v.isEmpty()) {
      return Optional.empty();
    }
    if (v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      if (v.length() > 9) {
        return Optional.of(Duration.ofSeconds(999_999_999L));
      }
      return Optional.of(Duration.ofSeconds(Long.parseLong(v)));
    }
    try {
      Instant at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
      Duration delay = Duration.between(now, at);
      return Optional.of(delay.isNegative() ? Duration.ZERO : delay);
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }
}
