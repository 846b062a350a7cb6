/**
 * Idem on NATS JetStream: the outbox relay's transport to JetStream and the idempotent consumer of
 * JetStream messages, on the NATS Java client (jnats). Exports {@code dev.idem.jetstream}. The
 * client's types ({@code JetStream}, {@code Message}, {@code MessageHandler}) are in this module's
 * API, so it requires the client transitively; the application brings the client's version it runs
 * on.
 */
// the client is an automatic module (an Automatic-Module-Name in its manifest, no descriptor)
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.idem.jetstream {
  requires transitive dev.idem.outbox;
  requires transitive io.nats.jnats;
  requires static transitive org.jspecify;

  exports dev.idem.jetstream;
}
