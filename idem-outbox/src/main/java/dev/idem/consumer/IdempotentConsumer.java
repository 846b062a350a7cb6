package dev.idem.consumer;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * An idempotent message consumer in transactional mode, independent of the broker: the adapters
 * ({@link dev.idem.consumer.rabbitmq.RabbitMqIdempotentConsumer}, {@link
 * dev.idem.consumer.jetstream.JetStreamIdempotentConsumer}) turn a delivery into an {@link
 * InboundMessage}, call {@link #process} and then acknowledge, redeliver or dead-letter as the
 * {@link Verdict} says.
 *
 * <p>Each message is one operation for Idem: idempotency key = the message's {@code
 * Idempotency-Key} header if it has one, else its message id; scope = (the consumer's name, {@code
 * "consume"}); fingerprint = SHA-256 of the body bytes. The handler's writes, the key and its
 * stored response commit in one transaction ({@link JdbcIdempotency}), so:
 *
 * <ul>
 *   <li>a redelivery after a crash between the commit and the acknowledgement replays: the handler
 *       does not run, and the verdict is {@link Verdict.Action#ACK};
 *   <li>a handler failure rolls back and releases the key: {@link Verdict.Action#RETRY} while the
 *       delivery count is below {@link Builder#maxDeliveries}, then {@link
 *       Verdict.Action#DEAD_LETTER} with the failure as the reason;
 *   <li>a message without a usable key (none, or not a valid idempotency key: printable ASCII, at
 *       most 255 characters), or whose id was already used with another body, is dead-lettered at
 *       once: it is never run without protection, never silently dropped.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 */
public final class IdempotentConsumer {

  /** The header that, when present, gives the idempotency key instead of the message id. */
  public static final String KEY_HEADER = "Idempotency-Key";
  /** The operation part of every consumer's scope. */
  public static final String OPERATION = "consume";

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]{1,200}");
  private static final StoredResponse HANDLED = StoredResponse.of(200, new byte[0]);

  private final String name;
  private final JdbcIdempotency idempotency;
  private final MessageHandler handler;
  private final int maxDeliveries;

  private IdempotentConsumer(Builder b) {
    this.name = b.name;
    this.idempotency = b.idempotency;
    this.handler = b.handler;
    this.maxDeliveries = b.maxDeliveries;
  }

  /**
   * @param name the consumer's name, the principal of its scope: letters, digits, {@code . _ : -},
   *     1 to 200 characters. Two consumers with the same name share their keys; give each logical
   *     consumer its own name.
   * @param idempotency the transactional-mode engine; it must have a {@code DataSource}
   * @param handler the application's handling
   * @return a builder with at most 5 deliveries
   * @throws IllegalArgumentException if the name is not acceptable
   */
  public static Builder builder(String name, JdbcIdempotency idempotency, MessageHandler handler) {
    return new Builder(name, idempotency, handler);
  }

  /** @return the consumer's name */
  public String name() {
    return name;
  }

  /** @return the most deliveries of a failing message before it is dead-lettered */
  public int maxDeliveries() {
    return maxDeliveries;
  }

  /**
   * Handles one message through Idem and says what to do with it. Never throws for a failure of
   * the handler or the store: those become {@link Verdict.Action#RETRY} or {@link
   * Verdict.Action#DEAD_LETTER}.
   *
   * @param message the message, never {@code null}
   * @return the verdict, never {@code null}
   */
  public Verdict process(InboundMessage message) {
    Objects.requireNonNull(message, "message");
    String raw = message.header(KEY_HEADER) != null ? message.header(KEY_HEADER) : message.messageId();
    if (raw == null) {
      return new Verdict(Verdict.Action.DEAD_LETTER, null,
          "no idempotency key: the message has neither a message id nor an " + KEY_HEADER + " header");
    }
    IdempotencyKey key;
    try {
      key = IdempotencyKey.of(raw);
    } catch (InvalidIdempotencyKeyException e) {
      return new Verdict(Verdict.Action.DEAD_LETTER, null, "the message id is not a valid idempotency key: " + e.getMessage());
    }
    IdempotentRequest request = new IdempotentRequest(Scope.of(name, OPERATION), key, Fingerprint.ofBytes(message.body()));
    try {
      Outcome outcome = idempotency.execute(request, connection -> {
        handler.handle(connection, message);
        return HANDLED;
      });
      return new Verdict(Verdict.Action.ACK, outcome, null);
    } catch (IdempotencyKeyReusedException e) {
      return new Verdict(Verdict.Action.DEAD_LETTER, null,
          "message id '" + key.value() + "' was already handled with another body: " + e.getMessage());
    } catch (RuntimeException e) {
      Throwable cause = e instanceof dev.idem.core.EffectFailedException && e.getCause() != null ? e.getCause() : e;
      String reason = cause.getClass().getName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
      if (message.deliveryCount() >= maxDeliveries) {
        return new Verdict(Verdict.Action.DEAD_LETTER, null,
            "failed on delivery " + message.deliveryCount() + " of at most " + maxDeliveries + ": " + reason);
      }
      return new Verdict(Verdict.Action.RETRY, null, reason);
    }
  }

  /** Builds an {@link IdempotentConsumer}. Not thread-safe; setters validate eagerly. */
  public static final class Builder {
    private final String name;
    private final JdbcIdempotency idempotency;
    private final MessageHandler handler;
    private int maxDeliveries = 5;

    private Builder(String name, JdbcIdempotency idempotency, MessageHandler handler) {
      Objects.requireNonNull(name, "name");
      if (!NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("consumer name must be 1 to 200 of [A-Za-z0-9._:-], was '" + name + "'");
      }
      this.name = name;
      this.idempotency = Objects.requireNonNull(idempotency, "idempotency");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /**
     * @param maxDeliveries how many deliveries a failing message gets before it is dead-lettered,
     *     1 to 1000; default 5. Counted by the broker where it counts (JetStream; RabbitMQ quorum
     *     queues), else by the adapter (see its documentation).
     */
    public Builder maxDeliveries(int maxDeliveries) {
      if (maxDeliveries < 1 || maxDeliveries > 1000) {
        throw new IllegalArgumentException("maxDeliveries must be between 1 and 1000, was " + maxDeliveries);
      }
      this.maxDeliveries = maxDeliveries;
      return this;
    }

    /** @return a new consumer */
    public IdempotentConsumer build() {
      return new IdempotentConsumer(this);
    }
  }
}
