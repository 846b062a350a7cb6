package dev.idem.spring;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.LeaseMessageHandler;
import dev.idem.consumer.MessageHandler;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.kafka.KafkaRecordHandler;

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

  private final ConsumerEngines engines;

  IdemKafkaListeners(ConsumerEngines engines) {
    this.engines = engines;
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
    return IdemKafkaListener.of(engines.transactional(name, handler),
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
    return IdemKafkaListener.of(engines.lease(name, handler),
        KafkaRecordHandler.KeySource.idHeader(), deadLetter);
  }
}
