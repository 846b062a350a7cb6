package dev.idem.spring.kafka;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.LeaseMessageHandler;
import dev.idem.consumer.MessageHandler;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.spring.internal.ConsumerEngines;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;

/**
 * Makes {@link IdemKafkaListener}s with the application's Idem engines: auto-configured when
 * spring-kafka and idem-kafka are on the class path. Transactional mode uses the key table of the
 * {@link JdbcIdempotency} bean (its table, retention, response policy and protection, from the
 * {@code idem.*} properties) in the application's {@code DataSource}: each record is one
 * Spring transaction on the application's transaction manager, so that the handler's writes through
 * the {@code JdbcTemplate} bean, {@code JdbcClient}, JPA repositories and {@code @Transactional}
 * services on that {@code DataSource} commit or roll back with its key (outside any Kafka transaction of the container). Lease mode uses the
 * {@link LeaseIdempotency} bean. The record's id is its {@code message-id} header (what the outbox
 * relay sets); at most 5 deliveries of a failing record. For another key source or bound, build
 * the {@link IdempotentConsumer} yourself and use {@link IdemKafkaListener#of}.
 *
 * <p>Dead letters through Spring Boot's own Kafka beans: {@link #deadLetterTopic(KafkaTemplate,
 * String)} or {@link #deadLetterTopic(ProducerFactory, String)}, which make the byte-array producer
 * {@link KafkaRecordHandler.DeadLetter#toTopic} needs from the template's or factory's settings
 * ({@code spring.kafka.producer.*}), closed with the application context.
 *
 * <p>Thread-safe.
 */
public final class IdemKafkaListeners implements AutoCloseable {

  private final ConsumerEngines engines;
  private final List<DefaultKafkaProducerFactory<byte[], byte[]>> producers = new CopyOnWriteArrayList<>();

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
    return transactional(name, KafkaRecordHandler.KeySource.idHeader(), handler, deadLetter);
  }

  /**
   * As {@link #transactional(String, MessageHandler, KafkaRecordHandler.DeadLetter)}, with the
   * record's id read from {@code keySource}: {@link KafkaRecordHandler.KeySource#recordKey()} for
   * producers that key each record by its id (a plain {@code KafkaTemplate.send(topic, id, value)}
   * sets no {@code message-id} header), or {@link KafkaRecordHandler.KeySource#header(String)}.
   * A record whose source gives no id is dead-lettered, never run unprotected.
   *
   * @param name the consumer's name, the scope of its keys
   * @param keySource where a record's id is, never {@code null}
   * @param handler the handling
   * @param deadLetter what happens to a record that will not be handled
   * @return a new listener; keep it (a bean)
   * @throws IllegalStateException if there is no {@link JdbcIdempotency} bean or no single {@code
   *     DataSource}
   * @throws IllegalArgumentException if the name is not acceptable
   */
  public IdemKafkaListener transactional(String name, KafkaRecordHandler.KeySource keySource, MessageHandler handler,
      KafkaRecordHandler.DeadLetter deadLetter) {
    return IdemKafkaListener.of(engines.transactional(name, handler), Objects.requireNonNull(keySource, "keySource"), deadLetter);
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
    return lease(name, KafkaRecordHandler.KeySource.idHeader(), handler, deadLetter);
  }

  /**
   * As {@link #lease(String, LeaseMessageHandler, KafkaRecordHandler.DeadLetter)}, with the record's
   * id read from {@code keySource} (see {@link #transactional(String, KafkaRecordHandler.KeySource,
   * MessageHandler, KafkaRecordHandler.DeadLetter)}).
   *
   * @param name the consumer's name, the scope of its keys
   * @param keySource where a record's id is, never {@code null}
   * @param handler the handling
   * @param deadLetter what happens to a record that will not be handled
   * @return a new listener; keep it (a bean)
   * @throws IllegalStateException if there is no {@link LeaseIdempotency} bean
   * @throws IllegalArgumentException if the name is not acceptable
   */
  public IdemKafkaListener lease(String name, KafkaRecordHandler.KeySource keySource, LeaseMessageHandler handler,
      KafkaRecordHandler.DeadLetter deadLetter) {
    return IdemKafkaListener.of(engines.lease(name, handler), Objects.requireNonNull(keySource, "keySource"), deadLetter);
  }

  /**
   * Dead letters to {@code topic}, produced with the settings of Spring Boot's {@code KafkaTemplate}
   * bean (its producer factory's configuration: servers, security, client settings), with
   * byte-array serializers and {@code acks=all}, outside any Kafka transaction.
   *
   * @param template the application's template, never {@code null}; any key and value types
   * @param topic the dead-letter topic, never {@code null}
   * @return the policy, with a 10-second acknowledgement timeout
   * @throws NullPointerException if an argument is {@code null}
   */
  public KafkaRecordHandler.DeadLetter deadLetterTopic(KafkaTemplate<?, ?> template, String topic) {
    return deadLetterTopic(Objects.requireNonNull(template, "template").getProducerFactory(), topic);
  }

  /**
   * Dead letters to {@code topic}, produced with the configuration of a Spring Kafka {@code
   * ProducerFactory} (Spring Boot's bean, say), with byte-array serializers and {@code acks=all},
   * outside any Kafka transaction. The producer is made once per call and closed when this bean is
   * (with the application context).
   *
   * @param factory the producer factory whose configuration to use, never {@code null}
   * @param topic the dead-letter topic, never {@code null}
   * @return the policy, with a 10-second acknowledgement timeout
   * @throws NullPointerException if an argument is {@code null}
   */
  public KafkaRecordHandler.DeadLetter deadLetterTopic(ProducerFactory<?, ?> factory, String topic) {
    Objects.requireNonNull(factory, "factory");
    Objects.requireNonNull(topic, "topic");
    Map<String, Object> config = new HashMap<>(factory.getConfigurationProperties());
    config.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
    config.remove(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG);
    config.remove(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG);
    config.put(ProducerConfig.ACKS_CONFIG, "all");
    DefaultKafkaProducerFactory<byte[], byte[]> bytes =
        new DefaultKafkaProducerFactory<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    producers.add(bytes);
    return KafkaRecordHandler.DeadLetter.toTopic(bytes.createProducer(), topic, Duration.ofSeconds(10));
  }

  /** Closes the dead-letter producers this bean made; called by the application context when it closes. */
  @Override
  public void close() {
    for (DefaultKafkaProducerFactory<byte[], byte[]> f : producers) {
      f.destroy();
    }
    producers.clear();
  }
}
