package dev.idem.spring.internal;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.MessageHandler;
import dev.idem.core.IdempotentRequest;
import dev.idem.spring.outbox.IdemOutbox;
import java.sql.Connection;
import org.jspecify.annotations.Nullable;

/**
 * The operation whose key the current thread runs under, for {@link IdemOutbox}: a transactional
 * idempotent consumer's message (set here by {@link ConsumerEngines} while its handler runs), or
 * the request the {@code Idempotency-Key} filter protects (found through {@link HttpOperations}).
 * Thread-safe: the consumer's operation is thread-confined.
 *
 * @param request the operation as Idem runs it (scope, key, fingerprint), never {@code null}
 * @param connection the connection of the transaction that records the key, or {@code null} when
 *     the key is not recorded in a transaction (lease mode)
 * @param description what runs, for messages ("the request POST /orders", "the consumer billing")
 */
public record CurrentOperation(IdempotentRequest request, @Nullable Connection connection, String description) {

  private static final ThreadLocal<CurrentOperation> CONSUMER = new ThreadLocal<>();

  /** The operation of the request the filter protects on this thread, if any. */
  @FunctionalInterface
  public interface HttpOperations {
    /** @return the current request's operation, or {@code null} outside a protected request */
    @Nullable CurrentOperation current();
  }

  /** @return the consumer operation running on this thread, or {@code null} */
  public static @Nullable CurrentOperation consumer() {
    return CONSUMER.get();
  }

  /**
   * Wraps a transactional consumer's handler so that, while it runs, {@link #consumer()} is the
   * message's operation on the handler's connection, as the consumer derives it ({@link
   * IdempotentConsumer#requestOf}).
   *
   * @param name the consumer's name, never {@code null}
   * @param handler the application's handler, never {@code null}
   * @return the wrapped handler
   */
  public static MessageHandler around(String name, MessageHandler handler) {
    return (connection, message) -> {
      IdempotentRequest request = IdempotentConsumer.requestOf(name, message).orElse(null);
      if (request == null) {
        handler.handle(connection, message); // not reached: a message without a key is dead-lettered first
        return;
      }
      CurrentOperation outer = CONSUMER.get();
      CONSUMER.set(new CurrentOperation(request, connection, "the consumer " + name + " (" + source(message) + ")"));
      try {
        handler.handle(connection, message);
      } finally {
        if (outer == null) {
          CONSUMER.remove();
        } else {
          CONSUMER.set(outer);
        }
      }
    };
  }

  private static String source(InboundMessage message) {
    return message.source().isEmpty() ? "message" : message.source();
  }
}
