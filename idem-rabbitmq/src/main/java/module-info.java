/**
 * Idem on RabbitMQ: the outbox relay's transport to RabbitMQ and the idempotent consumer of a
 * queue, on the plain RabbitMQ Java client. Exports {@code dev.idem.rabbitmq}. The client's types
 * ({@code Connection}, {@code Channel}) are in this module's API, so it requires the client
 * transitively; the application brings the client's version it runs on.
 */
// the client is an automatic module (an Automatic-Module-Name in its manifest, no descriptor)
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.idem.rabbitmq {
  requires transitive dev.idem.outbox;
  requires transitive com.rabbitmq.client;
  requires static transitive org.jspecify;

  exports dev.idem.rabbitmq;
}
