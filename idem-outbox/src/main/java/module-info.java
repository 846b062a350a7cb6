/**
 * Effects outside the database: the transactional outbox, its relay (RabbitMQ, NATS JetStream,
 * HTTP) and the idempotent consumers. The broker clients and idem-client are optional ({@code
 * requires static}): an application brings the ones it uses. Exports every package but none is
 * internal; {@code dev.idem.outbox.spi} is for transports of other brokers.
 */
module dev.idem.outbox {
  requires transitive dev.idem.core;
  requires transitive dev.idem.jdbc;
  // optional: the application brings the ones it uses, and requires them itself
  requires static dev.idem.client;
  requires static com.rabbitmq.client;
  requires static io.nats.jnats;
  requires static transitive org.jspecify;

  exports dev.idem.outbox;
  exports dev.idem.outbox.spi;
  exports dev.idem.outbox.http;
  exports dev.idem.outbox.rabbitmq;
  exports dev.idem.outbox.jetstream;
  exports dev.idem.consumer;
  exports dev.idem.consumer.rabbitmq;
  exports dev.idem.consumer.jetstream;
}
