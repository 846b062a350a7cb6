package dev.idem.client;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Parses the {@code Retry-After} response header field (RFC 9110 section 10.2.3): either a number
 * of seconds ({@code delay-seconds}) or an HTTP-date. An HTTP-date is accepted in all three formats
 * that RFC 9110 section 5.6.7 requires a recipient to accept: IMF-fixdate ({@code Sun, 06 Nov 1994
 * 08:49:37 GMT}), the obsolete RFC 850 format ({@code Sunday, 06-Nov-94 08:49:37 GMT}, a two-digit
 * year more than 50 years in the future meaning the most recent past year with those digits) and
 * ANSI C's asctime format ({@code Sun Nov  6 08:49:37 1994}). Stateless and thread-safe.
 */
public final class RetryAfter {

  /** The most seconds a delay is read as: about 31 years, so that no later arithmetic overflows. */
  static final long MAX_SECONDS = 999_999_999L;

  /** Day (one or two digits), month name, four-digit year and time, in English. */
  private static final DateTimeFormatter DATE_TIME = DateTimeFormatter.ofPattern("d MMM uuuu HH:mm:ss", Locale.US);

  private RetryAfter() {}

  /**
   * @param value the field value, may be {@code null}
   * @param now the current time, to turn a date into a delay
   * @return the delay, never negative (a date in the past gives zero), at most 999 999 999 seconds;
   *     empty when the value is absent or malformed (a malformed value is ignored, as RFC 9110 lets a
   *     recipient do)
   */
  public static Optional<Duration> parse(@Nullable String value, Instant now) {
    return parse(value, null, now);
  }

  /**
   * As {@link #parse(String, Instant)}, with an HTTP-date measured against the response's own
   * {@code Date} field (RFC 9110 section 6.6.1) when it has a valid one: the server's "retry at
   * 12:00:05" sent at its 12:00:00 is a delay of 5 seconds, whatever the client's clock says. So a
   * server clock that is ahead of the client's does not turn a short wait into one past the
   * client's deadline, and one that is behind does not make the client retry at once.
   *
   * @param value the {@code Retry-After} field value, may be {@code null}
   * @param date the response's {@code Date} field value, may be {@code null}
   * @param now the client's current time, used when {@code date} is absent or malformed
   * @return the delay, as for {@link #parse(String, Instant)}
   */
  public static Optional<Duration> parse(@Nullable String value, @Nullable String date, Instant now) {
    if (value == null) {
      return Optional.empty();
    }
    String v = value.trim();
    if (v.isEmpty()) {
      return Optional.empty();
    }
    if (v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      if (v.length() > 9) {
        return Optional.of(Duration.ofSeconds(MAX_SECONDS));
      }
      return Optional.of(Duration.ofSeconds(Long.parseLong(v)));
    }
    Optional<Instant> at = httpDate(v, now);
    if (at.isEmpty()) {
      return Optional.empty();
    }
    Instant reference = date == null ? now : httpDate(date.trim(), now).orElse(now);
    Duration delay = Duration.between(reference, at.get());
    if (delay.isNegative()) {
      return Optional.of(Duration.ZERO);
    }
    return Optional.of(delay.getSeconds() >= MAX_SECONDS ? Duration.ofSeconds(MAX_SECONDS) : delay);
  }

  /**
   * Parses an HTTP-date in any of the three formats of RFC 9110 section 5.6.7. The day name of the
   * obsolete formats is not checked against the date (it is redundant).
   *
   * @param value the trimmed text
   * @param now the current time, to place a two-digit RFC 850 year
   * @return the instant, or empty when the text is none of the three formats
   */
  static Optional<Instant> httpDate(String value, Instant now) {
    try {
      return Optional.of(ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant());
    } catch (DateTimeParseException e) {
      // not IMF-fixdate: try the obsolete formats
    }
    String[] parts = value.trim().split(" +");
    try {
      if (parts.length == 5) { // asctime: "Sun Nov  6 08:49:37 1994"
        return Optional.of(LocalDateTime.parse(parts[2] + " " + parts[1] + " " + parts[4] + " " + parts[3], DATE_TIME).toInstant(ZoneOffset.UTC));
      }
      if (parts.length == 4 && parts[0].endsWith(",") && parts[3].equals("GMT")) { // rfc850: "Sunday, 06-Nov-94 08:49:37 GMT"
        String[] date = parts[1].split("-");
        if (date.length != 3 || date[2].length() != 2) {
          return Optional.empty();
        }
        int thisYear = now.atZone(ZoneOffset.UTC).getYear();
        int year = thisYear / 100 * 100 + Integer.parseInt(date[2]);
        if (year > thisYear + 50) {
          year -= 100; // RFC 9110 section 5.6.7: more than 50 years ahead is the past century
        }
        return Optional.of(LocalDateTime.parse(date[0] + " " + date[1] + " " + year + " " + parts[2], DATE_TIME).toInstant(ZoneOffset.UTC));
      }
    } catch (DateTimeException | NumberFormatException e) {
      return Optional.empty();
    }
    return Optional.empty();
  }
}
