package dev.idem.spring;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.LeaseMessageHandler;
import dev.idem.consumer.MessageHandler;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The idempotent consumers that {@link IdemRabbitListeners} and {@link IdemKafkaListeners} hand to
 * their listeners, built from the application's engines, looked up when a listener is made.
 * Transactional mode: the key table of the {@link JdbcIdempotency} bean (its table, retention,
 * response policy, protection and order) in the application's single {@code DataSource}, each
 * message one transaction Idem begins and commits, outside any Spring transaction (the starter's
 * engine has no {@code DataSource} of its own: the filter and {@code @Idempotent} methods run in
 * Spring's transaction). Lease mode: the {@link LeaseIdempotency} bean. Thread-safe.
 */
final class ConsumerEngines {

  private final ObjectProvider<JdbcIdempotency> jdbc;
  private final ObjectProvider<DataSource> dataSource;
  private final ObjectProvider<LeaseIdempotency> leases;

  ConsumerEngines(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
      ObjectProvider<LeaseIdempotency> leases) {
    this.jdbc = jdbc;
    this.dataSource = dataSource;
    this.leases = leases;
  }

  /**
   * @throws IllegalStateException if there is no {@link JdbcIdempotency} bean or no single {@code DataSource}
   * @throws IllegalArgumentException if the name is not acceptable
   * @throws NullPointerException if {@code handler} is {@code null}
   */
  IdempotentConsumer transactional(String name, MessageHandler handler) {
    Objects.requireNonNull(handler, "handler");
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
    return IdempotentConsumer.builder(name, idem, handler).build();
  }

  /**
   * @throws IllegalStateException if there is no {@link LeaseIdempotency} bean
   * @throws IllegalArgumentException if the name is not acceptable
   * @throws NullPointerException if {@code handler} is {@code null}
   */
  IdempotentConsumer lease(String name, LeaseMessageHandler handler) {
    Objects.requireNonNull(handler, "handler");
    LeaseIdempotency engine = leases.getIfAvailable();
    if (engine == null) {
      throw new IllegalStateException("a lease-mode idempotent consumer needs a LeaseIdempotency bean");
    }
    return IdempotentConsumer.leaseBuilder(name, engine, handler).build();
  }
}
