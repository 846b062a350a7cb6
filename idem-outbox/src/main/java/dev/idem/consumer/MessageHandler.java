package dev.idem.consumer;

import java.sql.Connection;

/**
 * The application's handling of one message in transactional mode: it writes through the given
 * connection, inside the transaction that also holds the message's idempotency key. The message is
 * acknowledged only after that transaction commits.
 *
 * <p>The rules of {@link dev.idem.core.EffectContext#connection()} apply (no commit, rollback or auto-commit change).
 * It runs at most once per message id whose handling committed; a redelivery of a handled message
 * runs nothing. An exception rolls everything back, releases the key and makes the message be
 * redelivered, up to the consumer's bound, then dead-lettered with the exception as the reason.
 */
@FunctionalInterface
public interface MessageHandler {

  /**
   * @param connection the transaction's connection, never {@code null}
   * @param message the message, never {@code null}
   * @throws Exception anything: rolled back, redelivered or dead-lettered
   */
  void handle(Connection connection, InboundMessage message) throws Exception;
}
