package dev.idem.outbox.spi;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of delivering one intent.
 *
 * @param id the intent's id, never {@code null}
 * @param status what happened, never {@code null}
 * @param reason why it failed (shown in the outbox as the last error), {@code null} when delivered
 */
public record Delivery(String id, Status status, @Nullable String reason) {

  /** What happened to one intent. */
  public enum Status {
    /** The receiver took responsibility for it: the intent becomes SENT. */
    DELIVERED,
    /** A failure that may pass: tried again after a backoff, until the relay's attempts run out. */
    RETRY,
    /** The receiver refused it for good (for example HTTP 400 or 422): the intent becomes DEAD at once. */
    REJECTED
  }

  /** Validates the components. */
  public Delivery {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(status, "status");
  }

  /** @return a {@link Status#DELIVERED} outcome */
  public static Delivery delivered(String id) {
    return new Delivery(id, Status.DELIVERED, null);
  }

  /** @return a {@link Status#RETRY} outcome with its reason */
  public static Delivery retry(String id, String reason) {
    return new Delivery(id, Status.RETRY, reason);
  }

  /** @return a {@link Status#REJECTED} outcome with its reason */
  public static Delivery rejected(String id, String reason) {
    return new Delivery(id, Status.REJECTED, reason);
  }
}
