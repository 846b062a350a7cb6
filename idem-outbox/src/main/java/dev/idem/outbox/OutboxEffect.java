package dev.idem.outbox;

import dev.idem.core.StoredResponse;
import java.sql.Connection;

/**
 * A transactional-mode effect that may record outgoing intents: it writes its rows through the
 * connection and adds intents to the writer, all in the transaction that holds the idempotency
 * key. Turn it into an {@link dev.idem.core.Effect} with {@link Outbox#effect}.
 *
 * <p>The rules of {@link dev.idem.core.EffectContext#connection()} apply: the effect must not commit, roll back or
 * change the auto-commit mode of the connection. It runs at most once per successful claim; a
 * replay does not run it, so no intent is recorded twice.
 */
@FunctionalInterface
public interface OutboxEffect {

  /**
   * @param connection the connection of the transaction, never {@code null}
   * @param intents where to record outgoing intents, in order; valid only during this call
   * @return the response to store and return, never {@code null}
   * @throws Exception anything; it rolls the effect, its intents and the claim back
   */
  StoredResponse apply(Connection connection, IntentWriter intents) throws Exception;
}
