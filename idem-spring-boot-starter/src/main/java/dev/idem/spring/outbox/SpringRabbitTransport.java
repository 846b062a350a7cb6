package dev.idem.spring.outbox;

import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import dev.idem.rabbitmq.RabbitMqTransport;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;

/**
 * The outbox relay's {@link Intent.Kind#RABBITMQ} transport on Spring Boot's AMQP settings:
 * idem-rabbitmq's {@link RabbitMqTransport} (persistent, mandatory, publisher confirms on a channel
 * of its own) on the RabbitMQ client connection of the application's Spring AMQP {@link
 * ConnectionFactory} ({@code spring.rabbitmq.*}), taken again when Spring replaced it.
 * Thread-safe: deliveries are serialized.
 */
final class SpringRabbitTransport implements IntentTransport, AutoCloseable {

  private final ConnectionFactory factory;
  private com.rabbitmq.client.Connection connection;
  private RabbitMqTransport delegate;

  /** @param factory the application's connection factory, never {@code null} */
  SpringRabbitTransport(ConnectionFactory factory) {
    this.factory = Objects.requireNonNull(factory, "factory");
  }

  @Override
  public Intent.Kind kind() {
    return Intent.Kind.RABBITMQ;
  }

  @Override
  public synchronized List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
    com.rabbitmq.client.Connection current;
    try {
      current = factory.createConnection().getDelegate();
    } catch (RuntimeException e) {
      List<Delivery> out = new ArrayList<>(batch.size());
      for (OutboxEntry entry : batch) {
        out.add(Delivery.retry(entry.id(), "cannot connect to RabbitMQ: " + e));
      }
      return out;
    }
    if (current != connection || delegate == null) {
      close();
      connection = current;
      delegate = new RabbitMqTransport(current);
    }
    return delegate.deliver(batch);
  }

  /** Closes the transport's channel; the connection stays Spring's. */
  @Override
  public synchronized void close() {
    if (delegate != null) {
      delegate.close();
      delegate = null;
    }
  }

  @Override
  public String toString() {
    return "Spring AMQP's ConnectionFactory (" + factory.getHost() + ":" + factory.getPort() + ")";
  }
}
