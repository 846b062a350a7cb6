package dev.idem.outbox;

import dev.idem.core.Scope;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One row of the outbox as read back: the intent, the operation that recorded it, and its delivery
 * state. Immutable and thread-safe.
 *
 * @param id the intent's deterministic id ({@link IntentId}), 36 characters
 * @param scope the scope of the operation that recorded it
 * @param key the idempotency key of that operation
 * @param position the intent's position in that operation, from 0
 * @param intent what to deliver
 * @param state where delivery stands
 * @param attempts how many times a relay has claimed it for delivery (0 until the first claim)
 * @param lastError why the last attempt failed, or {@code null}
 * @param createdAtMillis when it was recorded, in milliseconds since the epoch by the database's clock
 */
public record OutboxEntry(
    String id, Scope scope, String key, int position, Intent intent, State state, int attempts,
    @Nullable String lastError, long createdAtMillis) {

  /** Where an intent's delivery stands. */
  public enum State {
    /** Waiting for delivery, or being delivered under a relay's lease. */
    PENDING,
    /** Delivered: the broker confirmed it, or the HTTP receiver answered with a final success. */
    SENT,
    /**
     * Given up: the attempts ran out, or the receiver refused it for good. Kept with its reason
     * until retried by hand ({@link Outbox#retry}) or purged.
     */
    DEAD
  }

  /** Validates the components. */
  public OutboxEntry {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(intent, "intent");
    Objects.requireNonNull(state, "state");
  }
}
