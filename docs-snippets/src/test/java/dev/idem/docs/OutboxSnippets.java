package dev.idem.docs;

import com.rabbitmq.client.Channel;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.jetstream.JetStreamIdempotentConsumer;
import dev.idem.jetstream.JetStreamTransport;
import dev.idem.outbox.Intent;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.http.HttpTransport;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.rabbitmq.RabbitMqTransport;
import io.nats.client.Connection;
import io.nats.client.MessageHandler;
import java.io.IOException;
import java.net.URI;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;

/** The snippets of docs/outbox.md: compiled; the outbox's own suites run the same calls on real brokers. */
final class OutboxSnippets {

  private OutboxSnippets() {}

  /** An e-mail provider that deduplicates by the key it is given. */
  interface Mail {
    void send(byte[] body, String idempotencyKey);
  }

  static Outcome outbox(JdbcIdempotency idem, java.sql.Connection connection, DataSource dataSource,
      IdempotentRequest request, byte[] json, byte[] mailJson) {
    // tag::outbox[]
    Outbox outbox = Outbox.builder().build();          // table idem_outbox
    outbox.createSchema(dataSource);                    // at start-up, or from the shipped schema files

    Outcome outcome = idem.execute(connection, request, outbox.effect(request, (c, intents) -> {
      long id = JdbcQuickStart.insertNote(c, "order");
      intents.add(Intent.rabbitMq("orders", "order.created", json).withHeader("content-type", "application/json"));
      intents.add(Intent.jetStream("orders.created", json));
      intents.add(Intent.http("POST", URI.create("https://mail.example/send"), mailJson));
      return StoredResponse.of(201, "{\"id\":" + id + "}");
    }));
    // end::outbox[]
    return outcome;
  }

  static OutboxRelay relay(Outbox outbox, DataSource dataSource, com.rabbitmq.client.Connection rabbitConnection,
      Connection nats, IdempotentHttpClient idempotentHttpClient) throws IOException {
    // tag::relay[]
    OutboxRelay relay = OutboxRelay.builder(outbox, dataSource)
        .transport(new RabbitMqTransport(rabbitConnection))    // persistent, mandatory, publisher confirms
        .transport(new JetStreamTransport(nats.jetStream()))   // waits for the stream's ack
        .transport(new HttpTransport(idempotentHttpClient))
        .lease(Duration.ofSeconds(30)).maxAttempts(10).backoff(Duration.ofSeconds(1), Duration.ofMinutes(5))
        .build();
    relay.start(Duration.ofMillis(500));                       // or relay.runOnce() from your scheduler
    // end::relay[]
    return relay;
  }

  static MessageHandler consumer(JdbcIdempotency idem, Channel channel, Connection nats) throws IOException {
    // tag::consumer[]
    IdempotentConsumer billing = IdempotentConsumer.builder("billing", idem, (connection, message) -> {
      insertInvoice(connection, message.body());               // same transaction as the key
    }).maxDeliveries(5).build();

    // RabbitMQ, plain client, manual acks (quorum queues count deliveries on the broker)
    new RabbitMqIdempotentConsumer(channel, "billing.orders", billing,
        RabbitMqIdempotentConsumer.DeadLetter.toExchange("billing.dlx", "billing.orders")).start();

    // JetStream, any subscription with explicit acks; MaxDeliver above maxDeliveries or unlimited
    MessageHandler handler = new JetStreamIdempotentConsumer(billing, nats.jetStream(), "billing.dead", Duration.ofSeconds(1));
    // end::consumer[]
    return handler;
  }

  static IdempotentConsumer leaseConsumer(DataSource dataSource, Mail mail) {
    // tag::lease-consumer[]
    LeaseIdempotency leases = LeaseIdempotency.builder(JdbcLeaseStore.builder(dataSource).build())
        .lease(Duration.ofMinutes(2)).build();                // longer than the slowest handler
    IdempotentConsumer mailer = IdempotentConsumer.leaseBuilder("mailer", leases, (context, message) -> {
      mail.send(message.body(), context.key().value());       // the key as the provider's idempotency key
    }).maxDeliveries(5).build();                              // then the same adapters as above
    // end::lease-consumer[]
    return mailer;
  }

  static void insertInvoice(java.sql.Connection connection, byte[] body) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement("INSERT INTO invoices (body) VALUES (?)")) {
      ps.setBytes(1, body);
      ps.executeUpdate();
    }
  }
}
