package dev.idem.spring.rabbit;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.LeaseMessageHandler;
import dev.idem.consumer.MessageHandler;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.internal.ConsumerEngines;

/**
 * Makes {@link IdemRabbitListener}s with the application's Idem engines: auto-configured when
 * spring-rabbit and idem-rabbitmq are on the class path. Transactional mode uses the key table of
 * the {@link JdbcIdempotency} bean (its table, retention, response policy and protection, from the
 * {@code idem.*} properties) in the application's {@code DataSource}: each message is one
 * Spring transaction on the application's transaction manager, so that the handler's writes through
 * the {@code JdbcTemplate} bean, {@code JdbcClient}, JPA repositories and {@code @Transactional}
 * services on that {@code DataSource} commit or roll back with its key. Lease mode uses the {@link LeaseIdempotency} bean. At most 5 deliveries of a failing message; for another bound build
 * the {@link IdempotentConsumer} yourself and use {@link IdemRabbitListener#of}.
 *
 * <p>Thread-safe.
 */
public final class IdemRabbitListeners {

  private final ConsumerEngines engines;

  IdemRabbitListeners(ConsumerEngines engines) {
    this.engines = engines;
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
    return IdemRabbitListener.of(queue, engines.transactional(name, handler), deadLetter);
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
    return IdemRabbitListener.of(queue, engines.lease(name, handler), deadLetter);
  }
}
