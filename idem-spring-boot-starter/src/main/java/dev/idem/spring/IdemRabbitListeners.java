package dev.idem.spring;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.LeaseMessageHandler;
import dev.idem.consumer.MessageHandler;
import dev.idem.consumer.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Makes {@link IdemRabbitListener}s with the application's Idem engines: auto-configured when
 * spring-rabbit and idem-outbox are on the class path. Transactional mode uses the key table of
 * the {@link JdbcIdempotency} bean (its table, retention, response policy and protection, from the
 * {@code idem.*} properties) in the application's {@code DataSource}: each message is one
 * transaction on a connection of that {@code DataSource}, begun and committed by Idem, outside any
 * Spring transaction. Lease mode uses the {@link LeaseIdempotency} bean. At most 5 deliveries of a failing message; for another bound build
 * the {@link IdempotentConsumer} yourself and use {@link IdemRabbitListener#of}.
 *
 * <p>Thread-safe.
 */
public final class IdemRabbitListeners {

  private final ObjectProvider<JdbcIdempotency> jdbc;
  private final ObjectProvider<DataSource> dataSource;
  private final ObjectProvider<LeaseIdempotency> leases;

  IdemRabbitListeners(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
      ObjectProvider<LeaseIdempotency> leases) {
    this.jdbc = jdbc;
    this.dataSource = dataSource;
    this.leases = leases;
  }

  /**
   * A transactional-mode listener: the handler's writes on the given connection and the key commit
   * together, and the message is acknowledged after the commit.
   *
   * @param name the consumer's name, the scope of its keys (see {@link IdempotentConsumer#builder})
   * @param queue the queue the {@code @RabbitListener} consumes
   * @param handler the handling
   * @param deadLetter where dead letters go
   * @return a new listener; keep it (a bean)
   * @throws IllegalStateException if there is no {@link JdbcIdempotency} bean or no single {@code
   *     DataSource}
   * @throws IllegalArgumentException if the name is not acceptable
   */
  public IdemRabbitListener transactional(String name, String queue, MessageHandler handler,
      RabbitMqIdempotentConsumer.DeadLetter deadLetter) {
    JdbcIdempotency keys = jdbc.getIfUnique();
    DataSource ds = dataSource.getIfUnique();
    if (keys == null || ds == null) {
      throw new IllegalStateException("a transactional idempotent consumer needs the application's DataSource and spring-jdbc:"
          + (keys == null ? " there is no JdbcIdempotency bean" : " there is no single DataSource bean"));
    }
    // The starter's engine has no DataSource (the filter and @Idempotent methods run in Spring's
    // transaction); a consumer begins and commits its own, on the same key table.
    JdbcIdempotency idem = JdbcIdempotency.builder()
        .table(keys.table()).retention(keys.retention()).responsePolicy(keys.responsePolicy())
        .responseProtection(keys.responseProtection()).strategy(keys.strategy())
        .createSchema(false).dataSource(ds).build();
    return IdemRabbitListener.of(queue, IdempotentConsumer.builder(name, idem, Objects.requireNonNull(handler, "handler")).build(), deadLetter);
  }

  /**
   * A lease-mode listener, for handlers whose effect is outside the database.
   *
   * @param name the consumer's name, the scope of its keys
   * @param queue the queue the {@code @RabbitListener} consumes
   * @param handler the handling
   * @param deadLetter where dead letters go
   * @return a new listener; keep it (a bean)
   * @throws IllegalStateException if there is no {@link LeaseIdempotency} bean
   * @throws IllegalArgumentException if the name is not acceptable
   */
  public IdemRabbitListener lease(String name, String queue, LeaseMessageHandler handler,
      RabbitMqIdempotentConsumer.DeadLetter deadLetter) {
    LeaseIdempotency engine = leases.getIfAvailable();
    if (engine == null) {
      throw new IllegalStateException("a lease-mode idempotent consumer needs a LeaseIdempotency bean");
    }
    return IdemRabbitListener.of(queue, IdempotentConsumer.leaseBuilder(name, engine, Objects.requireNonNull(handler, "handler")).build(), deadLetter);
  }
}
