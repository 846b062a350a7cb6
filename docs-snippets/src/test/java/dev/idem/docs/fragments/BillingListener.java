package dev.idem.docs.fragments;

import com.rabbitmq.client.Channel;
import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.kafka.IdemKafkaListener;
import dev.idem.spring.kafka.IdemKafkaListeners;
import dev.idem.spring.rabbit.IdemRabbitListener;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.Acknowledgment;

/**
 * The Spring AMQP snippets of docs/outbox.md and the Spring Kafka ones of docs/kafka.md (compiled;
 * the starter's RabbitListenerTest and KafkaListenerTest run the same on a broker).
 */
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

  /** The Kafka listener bean. */
  @Configuration
  static class KafkaBillingConfiguration {
    // tag::kafka-bean[]
    @Bean
    IdemKafkaListener billingListener(IdemKafkaListeners listeners, KafkaTemplate<?, ?> kafkaTemplate) {
      return listeners.transactional("billing", (connection, message) -> {
        insertInvoice(connection, message.body());             // same transaction as the key
      }, listeners.deadLetterTopic(kafkaTemplate, "orders.DLT")); // Spring Boot's template
    }
    // end::kafka-bean[]
  }

  /** The Kafka listener methods. */
  static class KafkaBillingOrders {
    private final IdemKafkaListener billingListener;

    KafkaBillingOrders(IdemKafkaListener billingListener) {
      this.billingListener = billingListener;
    }

    // tag::kafka-method[]
    // container factory with AckMode.MANUAL_IMMEDIATE (or MANUAL)
    @KafkaListener(topics = "orders", groupId = "billing")
    void onOrder(ConsumerRecord<String, String> record, Acknowledgment ack) {
      billingListener.process(record, ack);                    // acknowledge, or nack(backoff) to retry
    }
    // end::kafka-method[]

    // tag::kafka-batch[]
    // batch container factory with AckMode.BATCH and
    // factory.setCommonErrorHandler(IdemKafkaListener.retryingErrorHandler(Duration.ofMillis(100)))
    @KafkaListener(topics = "orders", groupId = "billing-batch", containerFactory = "batchFactory")
    void onOrders(java.util.List<ConsumerRecord<String, String>> records) {
      billingListener.processBatch(records);                   // throws at the first record to retry
    }
    // end::kafka-batch[]
  }

  static void insertInvoice(Connection connection, byte[] body) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement("INSERT INTO invoices (body) VALUES (?)")) {
      ps.setBytes(1, body);
      ps.executeUpdate();
    }
  }
}
