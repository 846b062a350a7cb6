/**
 * Idem on Kafka: the idempotent consumer of topics (on the plain client, or one record at a time
 * for another poller) and the outbox relay's transport to Kafka. Exports {@code dev.idem.kafka}.
 *
 * <p>The Kafka client's types ({@code Consumer}, {@code ConsumerRecord}, {@code Producer}) are in
 * this module's API, so it requires the client transitively. kafka-clients (3.x and 4.x alike) has
 * neither a module descriptor nor an {@code Automatic-Module-Name}: on the module path it is the
 * automatic module {@code kafka.clients}, the name its file name {@code kafka-clients-<version>.jar}
 * gives, and that is the name required here. Maven's compiler plugin warns of it ("Required
 * filename-based automodules detected"): an application that renames the jar (a shaded or
 * repackaged client) must run this module on the class path, as nearly every application does.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.idem.kafka {
  requires transitive dev.idem.outbox;
  requires transitive kafka.clients;
  requires static transitive org.jspecify;

  exports dev.idem.kafka;
}
