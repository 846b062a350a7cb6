package dev.idem.spring.outbox;

import dev.idem.kafka.KafkaTransport;
import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.springframework.kafka.core.ProducerFactory;

/**
 * The outbox relay's {@link Intent.Kind#KAFKA} transport on Spring Boot's Kafka settings: idem-kafka's
 * {@link KafkaTransport} with the configuration of the application's {@link ProducerFactory}
 * ({@code spring.kafka.*}), made on the first delivery. Its serializers are left out (records are
 * bytes); {@code enable.idempotence} and {@code acks=all} are required and checked when this is
 * made. Thread-safe; {@link #close} closes the producer.
 */
final class SpringKafkaTransport implements IntentTransport, AutoCloseable {

  private final Map<String, Object> config;
  private volatile KafkaTransport delegate;

  /**
   * @param factory the application's producer factory, never {@code null}
   * @throws IllegalArgumentException if its configuration turns idempotence off or sets {@code acks} below {@code all}
   */
  SpringKafkaTransport(ProducerFactory<?, ?> factory) {
    Map<String, Object> c = new HashMap<>(factory.getConfigurationProperties());
    c.remove(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG);
    c.remove(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG);
    c.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
    KafkaTransport.idempotent(c); // refuses what would duplicate or reorder, now rather than at the first delivery
    this.config = c;
  }

  @Override
  public Intent.Kind kind() {
    return Intent.Kind.KAFKA;
  }

  @Override
  public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
    return delegate().deliver(batch);
  }

  private KafkaTransport delegate() {
    KafkaTransport d = delegate;
    if (d == null) {
      synchronized (this) {
        d = delegate;
        if (d == null) {
          d = new KafkaTransport(config);
          delegate = d;
        }
      }
    }
    return d;
  }

  @Override
  public synchronized void close() {
    if (delegate != null) {
      delegate.close();
      delegate = null;
    }
  }

  @Override
  public String toString() {
    return "Spring Kafka's ProducerFactory (" + config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG) + ")";
  }
}
