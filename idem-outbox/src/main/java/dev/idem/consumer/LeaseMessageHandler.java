package dev.idem.consumer;

import dev.idem.core.LeaseContext;

/**
 * The application's handling of one message in lease mode, for handlers whose effect is outside
 * the database (a payment API, an e-mail, a call to another service): it runs while the message's
 * claim is held, outside any store transaction, and the message is acknowledged only after the
 * completion is stored ({@link dev.idem.core.LeaseIdempotency}).
 *
 * <p>It runs at most once per message id whose completion was stored; a redelivery of a completed
 * message runs nothing. An exception releases the claim and makes the message be redelivered, up to
 * the consumer's bound, then dead-lettered with the exception as the reason. When the handler's
 * process died while holding the claim, the redelivery that takes the expired lease over runs it
 * with {@link LeaseContext#recovery()} {@code true}: the earlier run's effect may have happened, so
 * pass {@link LeaseContext#key()} downstream as its idempotency key, or check before acting again.
 */
@FunctionalInterface
public interface LeaseMessageHandler {

  /**
   * @param context the claim's scope, idempotency key, owner token and whether this run is a
   *     recovery, never {@code null}
   * @param message the message, never {@code null}
   * @throws Exception anything: the claim is released, and the message redelivered or dead-lettered
   */
  void handle(LeaseContext context, InboundMessage message) throws Exception;
}
