package dev.idem.spring.internal;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.LeaseMessageHandler;
import dev.idem.consumer.MessageHandler;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.spring.kafka.IdemKafkaListeners;
import dev.idem.spring.outbox.IdemOutbox;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The idempotent consumers that {@link IdemRabbitListeners} and {@link IdemKafkaListeners} hand to
 * their listeners, built from the application's engines, looked up when a listener is made.
 * Transactional mode: the key table of the {@link JdbcIdempotency} bean in the application's single
 * {@code DataSource}, each message one Spring transaction on the application's transaction manager
 * (as the filter's requests are), so that the handler's writes through the {@code JdbcTemplate}
 * bean, {@code JdbcClient}, JPA repositories or {@code @Transactional} services on that DataSource
 * commit or roll back with the message's key; the handler's {@code Connection} is that
 * transaction's. A transaction manager that runs on another DataSource is refused when the
 * listener is made. Lease mode: the {@link LeaseIdempotency} bean. Thread-safe.
 */
public final class ConsumerEngines {

  private final ObjectProvider<JdbcIdempotency> jdbc;
  private final ObjectProvider<DataSource> dataSource;
  private final ObjectProvider<LeaseIdempotency> leases;

  private final ListableBeanFactory beans;
  private final ObjectProvider<TraceContextPropagation> tracing;

  public ConsumerEngines(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
      ObjectProvider<LeaseIdempotency> leases, ListableBeanFactory beans, ObjectProvider<TraceContextPropagation> tracing) {
    this.jdbc = jdbc;
    this.dataSource = dataSource;
    this.leases = leases;
    this.beans = beans;
    this.tracing = tracing;
  }

  /** The context a message carries is continued (IdemTracingAutoConfiguration's, with Micrometer Tracing). */
  private TraceContextPropagation tracing() {
    return tracing.getIfUnique(() -> TraceContextPropagation.NONE);
  }

  /**
   * @throws IllegalStateException if there is no {@link JdbcIdempotency} bean, no single {@code
   *     DataSource}, no single transaction manager, or one that manages another DataSource
   * @throws IllegalArgumentException if the name is not acceptable
   * @throws NullPointerException if {@code handler} is {@code null}
   */
  public IdempotentConsumer transactional(String name, MessageHandler handler) {
    Objects.requireNonNull(handler, "handler");
    JdbcIdempotency keys = jdbc.getIfUnique();
    DataSource ds = dataSource.getIfUnique();
    if (keys == null || ds == null) {
      throw new IllegalStateException("a transactional idempotent consumer needs the application's DataSource and spring-jdbc:"
          + (keys == null ? " there is no JdbcIdempotency bean" : " there is no single DataSource bean"));
    }
    // While the handler runs, IdemOutbox finds the message's operation and its transaction's connection.
    return IdempotentConsumer.builder(name, SpringTransactions.consumerEngine(name, keys, ds, beans),
        CurrentOperation.around(name, handler)).tracing(tracing()).build();
  }

  /**
   * @throws IllegalStateException if there is no {@link LeaseIdempotency} bean
   * @throws IllegalArgumentException if the name is not acceptable
   * @throws NullPointerException if {@code handler} is {@code null}
   */
  public IdempotentConsumer lease(String name, LeaseMessageHandler handler) {
    Objects.requireNonNull(handler, "handler");
    LeaseIdempotency engine = leases.getIfAvailable();
    if (engine == null) {
      throw new IllegalStateException("a lease-mode idempotent consumer needs a LeaseIdempotency bean");
    }
    return IdempotentConsumer.leaseBuilder(name, engine, handler).tracing(tracing()).build();
  }
}
