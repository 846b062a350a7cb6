package dev.idem.spring;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.LeaseMessageHandler;
import dev.idem.consumer.MessageHandler;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.kafka.KafkaRecordHandler;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Makes {@link IdemKafkaListener}s with the application's Idem engines: auto-configured when
 * spring-kafka and idem-kafka are on the class path. Transactional mode uses the key table of the
 * {@link JdbcIdempotency} bean (its table, retention, response policy and protection, from the
 * {@code idem.*} properties) in the application's {@code DataSource}: each record is one
 * transaction on a connection of that {@code DataSource}, begun and committed by Idem, outside any
 * Spring transaction (and outside any Kafka transaction of the container). Lease mode uses the
 * {@link LeaseIdempotency} bean. The record's id is its {@code message-id} header (what the outbox
 * relay sets); at most 5 deliveries of a failing record. For another key source or bound, build
 * the {@link IdempotentConsumer} yourself and use {@link IdemKafkaListener#of}.
 *
 * <p>Thread-safe.
 */
public final class IdemKafkaListeners {

  private final ObjectProvider<JdbcIdempotency> jdbc;
  private final ObjectProvider<DataSource> dataSource;
  private final ObjectProvider<LeaseIdempotency> leases;

  IdemKafkaListeners(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
      ObjectProvider<LeaseIdempotency> leases) {
    this.jdbc = jdbc;
    this.dataSource = dataSource;
    this.leases = leases;
  }

  /**
   * A transactional-mode listener: the handler's writes on the given connection and the key commit
   * together, and the offset is committed after that commit.
   *
   * @param name the consumer's name, the scope of its keys (see {@link IdempotentConsumer#builder})
   * @param handler the handling
   * @param deadLetter what happens to a record that will not be handled
   * @return a new listener; keep it (a bean)
   * @throws IllegalStateException if there is no {@link JdbcIdempotency} bean or no single {@code
   *     DataSource}
   * @throws IllegalArgumentException if the name is not acceptable
   */
  public IdemKafkaListener transactional(String name, MessageHandler handler, KafkaRecordHandler.DeadLetter deadLetter) {
    JdbcIdempotency keys = jdbc.getIfUnique();
    DataSource ds = dataSource.getIfUnique();
    if (keys == null || ds == null) {
      throw new IllegalStateException("a transactional idempotent consumer needs the application's DataSource and spring-jdbc:"
          + (keys == null ? " there is no JdbcIdempotency bean" : " there is no single DataSource bean"));
    }
    JdbcIdempotency idem = JdbcIdempotency.builder()
        .table(keys.table()).retention(keys.retention()).responsePolicy(keys.responsePolicy())
        .responseProtection(keys.responseProtection()).strategy(keys.strategy())
        .createSchema(false).dataSource(ds).build();
    return IdemKafkaListener.of(IdempotentConsumer.builder(name, idem, Objects.requireNonNull(handler, "handler")).build(),
        KafkaRecordHandler.KeySource.idHeader(), deadLetter);
  }

  /**
   * A lease-mode listener, for handlers whose effect is outside the database.
   *
   * @param name the consumer's name, the scope of its keys
   * @param handler the handling
   * @param deadLetter what happens to a record that will not be handled
   * @return a new listener; keep it (a bean)
   * @throws IllegalStateException if there is no {@link LeaseIdempotency} bean
   * @throws IllegalArgumentException if the name is not acceptable
   */
  public IdemKafkaListener lease(String name, LeaseMessageHandler handler, KafkaRecordHandler.DeadLetter deadLetter) {
    LeaseIdempotency engine = leases.getIfAvailable();
    if (engine == null) {
      throw new IllegalStateException("a lease-mode idempotent consumer needs a LeaseIdempotency bean");
    }
    return IdemKafkaListener.of(IdempotentConsumer.leaseBuilder(name, engine, Objects.requireNonNull(handler, "handler")).build(),
        KafkaRecordHandler.KeySource.idHeader(), deadLetter);
  }
}
