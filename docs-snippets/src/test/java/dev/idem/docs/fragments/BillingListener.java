package dev.idem.docs.fragments;

import com.rabbitmq.client.Channel;
import dev.idem.consumer.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.IdemRabbitListener;
import dev.idem.spring.IdemRabbitListeners;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The Spring AMQP snippets of docs/outbox.md (compiled; the starter's RabbitListenerTest runs the same on a broker). */
public final class BillingListener {

  private BillingListener() {}

  /** The listener bean. */
  @Configuration
  static class BillingConfiguration {
    // tag::rabbit-bean[]
    @Bean
    IdemRabbitListener billingListener(IdemRabbitListeners listeners) {
      return listeners.transactional("billing", "billing.orders", (connection, message) -> {
        insertInvoice(connection, message.body());             // same transaction as the key
      }, RabbitMqIdempotentConsumer.DeadLetter.toExchange("billing.dlx", "billing.orders"));
    }
    // end::rabbit-bean[]
  }

  /** The listener method. */
  static class BillingOrders {
    private final IdemRabbitListener billingListener;

    BillingOrders(IdemRabbitListener billingListener) {
      this.billingListener = billingListener;
    }

    // tag::rabbit-method[]
    @RabbitListener(queues = "billing.orders", ackMode = "MANUAL")
    void onOrder(Message message, Channel channel) throws IOException {
      billingListener.process(message, channel);
    }
    // end::rabbit-method[]
  }

  static void insertInvoice(Connection connection, byte[] body) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement("INSERT INTO invoices (body) VALUES (?)")) {
      ps.setBytes(1, body);
      ps.executeUpdate();
    }
  }
}
