package dev.idem.outbox.spi;

import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import java.util.List;

/**
 * Delivers claimed intents of one {@link Intent.Kind} for an {@link dev.idem.outbox.OutboxRelay}.
 * Implementations send each intent with its id ({@link OutboxEntry#id()}) where the receiver can
 * see it, and report an outcome per intent; they must not report {@link Delivery.Status#DELIVERED}
 * before the receiver took responsibility (a broker's confirm, a final HTTP answer).
 *
 * <p>A relay calls {@link #deliver} from one thread at a time; an instance shared by several
 * relays must be thread-safe.
 */
public interface IntentTransport {

  /** @return the kind of intents this transport delivers */
  Intent.Kind kind();

  /**
   * Delivers a batch.
   *
   * @param batch the intents, all of {@link #kind()}, in the order they were recorded; not empty
   * @return one outcome per intent (matched by id; an intent without an outcome counts as {@link
   *     Delivery.Status#RETRY}), never {@code null}
   * @throws InterruptedException if interrupted while waiting for the receiver (the batch is then
   *     retried after the relay's lease)
   */
  List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException;
}
