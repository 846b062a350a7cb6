/**
 * Effects outside the database, broker-neutral: the transactional outbox, its relay, the SPI of its
 * transports, the HTTP transport and the idempotent consumer that each broker's adapter runs. The
 * brokers' transports and consumers are modules of their own ({@code dev.idem.kafka}, {@code
 * dev.idem.rabbitmq}, {@code dev.idem.jetstream}). idem-client, for the HTTP transport, is optional
 * ({@code requires static}): an application that uses it brings it. Exports every package but none
 * is internal; {@code dev.idem.outbox.spi} is for transports of other brokers.
 */
module dev.idem.outbox {
  requires transitive dev.idem.core;
  requires transitive dev.idem.jdbc;
  // optional: the application brings it when it uses the HTTP transport, and requires it itself
  requires static dev.idem.client;
  requires static transitive org.jspecify;

  exports dev.idem.outbox;
  exports dev.idem.outbox.spi;
  exports dev.idem.outbox.http;
  exports dev.idem.consumer;
}
