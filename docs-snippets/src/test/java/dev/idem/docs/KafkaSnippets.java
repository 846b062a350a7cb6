package dev.idem.docs;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.kafka.KafkaIdempotentConsumer;
import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.kafka.KafkaTransport;
import dev.idem.outbox.Intent;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxRelay;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;

/**
 * The Kafka snippets of docs/kafka.md, compiled here; idem-kafka's KafkaConsumerGroupTest and the
 * BrokerContract on Kafka run the same calls against a real broker.
 */
final class KafkaSnippets {

  private KafkaSnippets() {}

  /** Step 1: the order service records the order and its event in one transaction. */
  static void placeOrder(JdbcIdempotency idem, Outbox outbox, IdempotentRequest request, String orderId, byte[] event) {
    // tag::record[]
    idem.execute(request, outbox.effect(request, (connection, intents) -> {
      insertOrder(connection, orderId);
      intents.add(Intent.kafka("orders", orderId, event));       // record key = the order: one partition, in order
      return StoredResponse.of(201, "{\"order\":\"" + orderId + "\"}");
    }));
    // end::record[]
  }

  /** Step 2: the relay publishes the intents with the idempotent producer. */
  static OutboxRelay relay(Outbox outbox, DataSource dataSource) {
    // tag::relay[]
    KafkaTransport kafka = new KafkaTransport(Map.of(
        "bootstrap.servers", "kafka-1:9092,kafka-2:9092",
        "max.block.ms", "10000"));                                // enable.idempotence=true, acks=all: set by the transport
    OutboxRelay relay = OutboxRelay.builder(outbox, dataSource).transport(kafka)
        .lease(Duration.ofSeconds(30)).build();
    relay.start(Duration.ofMillis(500));
    // end::relay[]
    return relay;
  }

  /** Step 3: the billing service consumes the topic; each record's effect and key commit together. */
  static KafkaIdempotentConsumer billing(DataSource dataSource, KafkaProducer<byte[], byte[]> producer) {
    // tag::consumer[]
    JdbcIdempotency keys = JdbcIdempotency.builder().dataSource(dataSource).build();
    IdempotentConsumer billing = IdempotentConsumer.builder("billing", keys, (connection, message) -> {
      insertInvoice(connection, message.body());                 // same transaction as the key
    }).maxDeliveries(5).build();

    KafkaIdempotentConsumer orders = KafkaIdempotentConsumer.builder(
            Map.of("bootstrap.servers", "kafka-1:9092", "group.id", "billing"), List.of("orders"), billing)
        .concurrency(3)                                            // three members: the partitions are shared
        .commit(KafkaIdempotentConsumer.Commit.POLL)               // offsets after each poll's records committed
        .deadLetter(KafkaRecordHandler.DeadLetter.toTopic(producer, "orders.DLT"))
        .build();
    orders.start();
    // end::consumer[]
    return orders;
  }

  static void insertOrder(Connection connection, String orderId) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement("INSERT INTO orders (id) VALUES (?)")) {
      ps.setString(1, orderId);
      ps.executeUpdate();
    }
  }

  static void insertInvoice(Connection connection, byte[] body) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement("INSERT INTO invoices (body) VALUES (?)")) {
      ps.setString(1, new String(body, StandardCharsets.UTF_8));
      ps.executeUpdate();
    }
  }
}
