package dev.idem.consumer;

import dev.idem.core.Outcome;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a broker adapter must do with a message after {@link IdempotentConsumer#process}.
 *
 * @param action acknowledge, redeliver or dead-letter
 * @param outcome the Idem outcome when the handler ran or was replayed, else {@code null}
 * @param reason why it is redelivered or dead-lettered, {@code null} for {@link Action#ACK}
 */
public record Verdict(Action action, @Nullable Outcome outcome, @Nullable String reason) {

  /** The three things a consumer does with a message. */
  public enum Action {
    /** Handled now or before (its effect and key committed): acknowledge it. */
    ACK,
    /** Failed, nothing committed, the key released: have the broker deliver it again. */
    RETRY,
    /** Will not succeed, or failed on its last allowed delivery: move it to the dead letters, with the reason. */
    DEAD_LETTER
  }

  /** Validates the components. */
  public Verdict {
    Objects.requireNonNull(action, "action");
    if (action != Action.ACK) {
      Objects.requireNonNull(reason, "reason");
    }
  }
}
