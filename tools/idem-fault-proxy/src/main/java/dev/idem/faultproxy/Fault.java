package dev.idem.faultproxy;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Objects;

/**
 * What a {@link FaultProxy} does with one HTTP request: relay it ({@link #NONE}), lose the
 * response after the server produced it ({@link #LOSE_RESPONSE}), drop the request before the
 * server sees it ({@link #DROP_REQUEST}), or hold it for a while before relaying it ({@link
 * #delay(Duration)}).
 *
 * <p>Immutable and thread-safe; compare faults with {@link #equals(Object)}. The {@link
 * #toString()} form ({@code none}, {@code lose-response}, {@code drop-request}, {@code
 * delay:500ms}) is accepted by {@link #parse(String)}, which makes faults easy to pass on a command
 * line.
 */
public final class Fault {

  /** The kinds of fault. */
  public enum Kind {
    /** Forward the request and relay the response. */
    NONE,
    /**
     * Forward the whole request, read the server's whole response, then close the client
     * connection without sending any byte of that response.
     */
    LOSE_RESPONSE,
    /** Close the client connection without forwarding anything to the server. */
    DROP_REQUEST,
    /** Wait for {@link Fault#delay()} before forwarding, then behave as {@link #NONE}. */
    DELAY
  }

  /** Forward the request and relay the response; the default for every request number. */
  public static final Fault NONE = new Fault(Kind.NONE, Duration.ZERO);

  /**
   * The "response lost after the commit" case: the request reaches the server, the server writes
   * its whole response, and the proxy reads it completely, then resets the client connection
   * without relaying any of it. The client sees an {@link java.io.IOException}; the effect
   * happened.
   */
  public static final Fault LOSE_RESPONSE = new Fault(Kind.LOSE_RESPONSE, Duration.ZERO);

  /**
   * The request never reaches the server: the proxy resets the client connection as soon as it
   * has read the request head. The client sees an {@link java.io.IOException}; no effect happened.
   */
  public static final Fault DROP_REQUEST = new Fault(Kind.DROP_REQUEST, Duration.ZERO);

  private final Kind kind;
  private final Duration delay;

  private Fault(Kind kind, Duration delay) {
    this.kind = kind;
    this.delay = delay;
  }

  /**
   * A fault that holds the request, once the proxy has read it completely, for {@code delay}
   * before forwarding it, then relays the response as {@link #NONE} does.
   *
   * @param delay how long to wait; zero or positive, at most {@link Long#MAX_VALUE} nanoseconds
   * @return the fault, never {@code null}
   * @throws NullPointerException if {@code delay} is {@code null}
   * @throws IllegalArgumentException if {@code delay} is negative or too long for nanoseconds
   */
  public static Fault delay(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("delay must not be negative, was " + delay);
    }
    try {
      delay.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("delay too long: " + delay, e);
    }
    return new Fault(Kind.DELAY, delay);
  }

  /**
   * Parses the {@link #toString()} form of a fault, ignoring case and surrounding blanks: {@code
   * none}, {@code lose-response}, {@code drop-request} ({@code _} may replace {@code -}), or
   * {@code delay:<amount>} where the amount is {@code <n>ms}, {@code <n>s} or an ISO-8601 duration
   * such as {@code PT0.5S}.
   *
   * @param text the text to parse
   * @return the fault, never {@code null}
   * @throws NullPointerException if {@code text} is {@code null}
   * @throws IllegalArgumentException if {@code text} is not a fault
   */
  public static Fault parse(String text) {
    Objects.requireNonNull(text, "text");
    String t = text.trim().toLowerCase(Locale.ROOT).replace('_', '-');
    switch (t) {
      case "none":
        return NONE;
      case "lose-response":
        return LOSE_RESPONSE;
      case "drop-request":
        return DROP_REQUEST;
      default:
        break;
    }
    if (t.startsWith("delay:")) {
      String amount = t.substring("delay:".length()).trim();
      try {
        if (amount.matches("\\d{1,18}ms")) {
          return delay(Duration.ofMillis(Long.parseLong(amount.substring(0, amount.length() - 2))));
        }
        if (amount.matches("\\d{1,18}s")) {
          return delay(Duration.ofSeconds(Long.parseLong(amount.substring(0, amount.length() - 1))));
        }
        if (amount.startsWith("p")) {
          return delay(Duration.parse(amount.toUpperCase(Locale.ROOT)));
        }
      } catch (DateTimeParseException | ArithmeticException e) {
        throw new IllegalArgumentException("not a fault: " + text, e);
      }
    }
    throw new IllegalArgumentException(
        "not a fault: '" + text + "' (expected none, lose-response, drop-request or delay:<n>ms)");
  }

  /** @return the kind of this fault, never {@code null} */
  public Kind kind() {
    return kind;
  }

  /**
   * @return how long a {@link Kind#DELAY} fault holds the request; {@link Duration#ZERO} for the
   *     other kinds; never {@code null}
   */
  public Duration delay() {
    return delay;
  }

  /**
   * Two faults are equal when they have the same kind and the same delay.
   *
   * @param o the other object, may be {@code null}
   * @return whether {@code o} is an equal fault
   */
  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof Fault)) {
      return false;
    }
    Fault other = (Fault) o;
    return kind == other.kind && delay.equals(other.delay);
  }

  /** @return a hash code consistent with {@link #equals(Object)} */
  @Override
  public int hashCode() {
    return 31 * kind.hashCode() + delay.hashCode();
  }

  /**
   * @return {@code none}, {@code lose-response}, {@code drop-request} or {@code delay:<n>ms} (an
   *     ISO-8601 duration if the delay is not a whole number of milliseconds); readable by {@link
   *     #parse(String)}
   */
  @Override
  public String toString() {
    switch (kind) {
      case NONE:
        return "none";
      case LOSE_RESPONSE:
        return "lose-response";
      case DROP_REQUEST:
        return "drop-request";
      default:
        if (delay.toNanos() % 1_000_000L == 0) {
          return "delay:" + delay.toMillis() + "ms";
        }
        return "delay:" + delay;
    }
  }
}
