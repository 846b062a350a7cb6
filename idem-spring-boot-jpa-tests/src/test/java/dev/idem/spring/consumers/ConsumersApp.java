package dev.idem.spring.consumers;

import com.rabbitmq.client.Channel;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.kafka.IdemKafkaListener;
import dev.idem.spring.kafka.IdemKafkaListeners;
import dev.idem.spring.rabbit.IdemRabbitListener;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.config.EnableJpaRepositories;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The service {@link ConsumersKilledTest} starts in a JVM of its own and kills with -9: Spring
 * Boot's own Kafka and RabbitMQ settings ({@code spring.kafka.*}, {@code spring.rabbitmq.*}), the
 * starter with only {@code idem.principal} set, and three listeners protected as the docs say: a
 * {@code @KafkaListener} with manual acknowledgement, a {@code @KafkaListener} with automatic
 * acknowledgement (record) on Spring's default error handler, and a {@code @RabbitListener} with
 * manual acknowledgement. Each message writes one row to {@code payments} through the {@code
 * JdbcTemplate} bean, a Spring Data JPA repository or a {@code @Transactional} service using
 * {@code JdbcClient}, chosen by the message's number; a message whose body starts with {@code
 * poison} writes its row and then fails.
 *
 * <p>What it says for the test goes to standard output in lines starting with {@code IDEM-TEST}:
 * each verdict, and, when {@code test.kill-after=<channel>:<message id>} names a message, that the
 * message's transaction committed, after which its consumer thread waits for the kill and never
 * acknowledges.
 */
@SpringBootApplication
@EnableJpaRepositories(considerNestedRepositories = true)
public class ConsumersApp {

  public static void main(String[] args) {
    SpringApplication.run(ConsumersApp.class, args);
  }

  static synchronized void say(String line) {
    System.out.println("IDEM-TEST " + line);
    System.out.flush();
  }

  /** A payment row, written through JPA (the other styles write the same table with SQL). */
  @Entity
  @Table(name = "payments")
  public static class Payment {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    Long id;

    @Column(name = "message_id", nullable = false, length = 100)
    String messageId;

    @Column(nullable = false, length = 40)
    String channel;

    @Column(nullable = false, length = 20)
    String style;

    protected Payment() {}

    Payment(String messageId, String channel, String style) {
      this.messageId = messageId;
      this.channel = channel;
      this.style = style;
    }
  }

  public interface Payments extends JpaRepository<Payment, Long> {}

  /** A service whose method joins the caller's transaction (propagation REQUIRED, the default). */
  @Service
  public static class Ledger {
    private final JdbcClient jdbc;

    Ledger(DataSource dataSource) {
      this.jdbc = JdbcClient.create(dataSource);
    }

    @Transactional
    public void record(String messageId, String channel) {
      jdbc.sql("INSERT INTO payments(message_id, channel, style) VALUES (?, ?, 'service')").param(messageId).param(channel).update();
    }
  }

  /** The handling every listener shares. */
  @Component
  public static class Handler {
    private final JdbcTemplate jdbcTemplate;
    private final Payments payments;
    private final Ledger ledger;
    private final String killAfter;

    Handler(JdbcTemplate jdbcTemplate, Payments payments, Ledger ledger, Environment env) {
      this.jdbcTemplate = jdbcTemplate;
      this.payments = payments;
      this.ledger = ledger;
      this.killAfter = env.getProperty("test.kill-after", "");
    }

    /** The idempotent consumer's handler: one row by one of three styles; the connection is not used. */
    void handle(String channel, Connection unused, InboundMessage message) {
      String id = Objects.requireNonNull(message.messageId(), "message id");
      int n = Integer.parseInt(id.substring(id.lastIndexOf('-') + 1).replace("poison", "0"));
      switch (n % 3) {
        case 0 -> jdbcTemplate.update("INSERT INTO payments(message_id, channel, style) VALUES (?, ?, 'jdbc-template')", id, channel);
        case 1 -> payments.saveAndFlush(new Payment(id, channel, "jpa"));
        default -> ledger.record(id, channel);
      }
      if (new String(message.body(), StandardCharsets.UTF_8).startsWith("poison")) {
        throw new IllegalStateException("cannot pay " + id + " (after its row was written)");
      }
      if (killAfter.equals(channel + ":" + id)) {
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
          @Override
          public void afterCommit() {
            say("committed-not-acknowledged " + channel + " " + id);
            try {
              Thread.sleep(Duration.ofMinutes(10).toMillis()); // the acknowledgement never comes: the test kills -9
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        });
      }
    }
  }

  static void said(String channel, String id, Verdict verdict) {
    say("verdict " + channel + " " + id + " " + verdict.action() + " replayed=" + (verdict.outcome() != null && verdict.outcome().replayed())
        + " store-unavailable=" + verdict.storeUnavailable());
  }

  /** Automatic acknowledgement (record), on Spring's default error handler: Idem's starter makes it retry for ever. */
  @Bean
  @SuppressWarnings("unchecked")
  ConcurrentKafkaListenerContainerFactory<Object, Object> recordAckFactory(ConsumerFactory<?, ?> consumerFactory) {
    ConcurrentKafkaListenerContainerFactory<Object, Object> f = new ConcurrentKafkaListenerContainerFactory<>();
    f.setConsumerFactory((ConsumerFactory<Object, Object>) consumerFactory);
    f.getContainerProperties().setAckMode(ContainerProperties.AckMode.RECORD);
    return f;
  }

  @Bean
  IdemKafkaListener kafkaManual(IdemKafkaListeners listeners, Handler handler, KafkaTemplate<?, ?> template, Environment env) {
    return listeners.transactional("kafka-manual", (c, m) -> handler.handle("kafka-manual", c, m),
        listeners.deadLetterTopic(template, env.getProperty("test.topic") + ".DLT"));
  }

  @Bean
  IdemKafkaListener kafkaRecord(IdemKafkaListeners listeners, Handler handler, KafkaTemplate<?, ?> template, Environment env) {
    return listeners.transactional("kafka-record", (c, m) -> handler.handle("kafka-record", c, m),
        listeners.deadLetterTopic(template, env.getProperty("test.topic") + ".record.DLT"));
  }

  @Bean
  IdemRabbitListener rabbitManual(IdemRabbitListeners listeners, Handler handler, Environment env) {
    return listeners.transactional("rabbit-manual", env.getProperty("test.queue"), (c, m) -> handler.handle("rabbit-manual", c, m),
        RabbitMqIdempotentConsumer.DeadLetter.toExchange("", env.getProperty("test.queue") + ".dlq"));
  }

  /** The listener methods, as an application writes them. */
  @Component
  public static class Listeners {
    private final IdemKafkaListener manual;
    private final IdemKafkaListener record;
    private final IdemRabbitListener rabbit;

    Listeners(@Qualifier("kafkaManual") IdemKafkaListener manual, @Qualifier("kafkaRecord") IdemKafkaListener record,
        IdemRabbitListener rabbit) {
      this.manual = manual;
      this.record = record;
      this.rabbit = rabbit;
    }

    private static String id(ConsumerRecord<?, ?> r) {
      return new String(r.headers().lastHeader("message-id").value(), StandardCharsets.UTF_8);
    }

    @KafkaListener(id = "kafka-manual", topics = "${test.topic}", groupId = "${test.topic}-manual")
    void onManual(ConsumerRecord<String, String> r, Acknowledgment ack) {
      said("kafka-manual", id(r), manual.process(r, ack));
    }

    @KafkaListener(id = "kafka-record", topics = "${test.topic}.record", groupId = "${test.topic}-record",
        containerFactory = "recordAckFactory")
    void onRecord(ConsumerRecord<String, String> r) {
      try {
        said("kafka-record", id(r), record.process(r));
      } catch (IdemKafkaListener.RetryException e) {
        say("retry kafka-record " + id(r) + " " + e.getMessage());
        throw e; // the container seeks back and polls it again
      }
    }

    @RabbitListener(id = "rabbit-manual", queues = "${test.queue}", ackMode = "MANUAL")
    void onRabbit(Message message, Channel channel) throws IOException {
      said("rabbit-manual", message.getMessageProperties().getMessageId(), rabbit.process(message, channel));
    }
  }
}
