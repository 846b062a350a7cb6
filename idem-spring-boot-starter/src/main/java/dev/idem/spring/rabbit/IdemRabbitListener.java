package dev.idem.spring.rabbit;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Envelope;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.internal.ListenerLog;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter;

/**
 * One idempotent consumer for a Spring AMQP {@code @RabbitListener} method with {@code ackMode =
 * "MANUAL"}: the method hands each {@link Message} and its {@link Channel} to {@link #process}, which
 * runs the {@link IdempotentConsumer} (key = the {@code Idempotency-Key} header, else the {@code
 * message-id}; scope = the consumer's name; fingerprint = the body) and then acknowledges,
 * requeues or dead-letters the delivery on that channel, exactly as {@link
 * RabbitMqIdempotentConsumer} does for the plain client: the acknowledgement comes after the
 * handler's transaction committed; a redelivery of a handled message runs nothing and is
 * acknowledged; a failing handler is requeued up to {@link IdempotentConsumer#maxDeliveries}, then
 * dead-lettered with the reason.
 *
 * <pre>{@code
 * @RabbitListener(queues = "billing.orders", ackMode = "MANUAL")
 * void onOrder(Message message, Channel channel) throws IOException {
 *   billingListener.process(message, channel);
 * }
 * }</pre>
 *
 * <p>The container must not acknowledge by itself: with {@code AUTO} or {@code NONE} the broker
 * would drop a message Idem asked to requeue. In a Spring Boot application the starter checks it
 * before the containers start: a container that consumes the queue of an {@code IdemRabbitListener}
 * bean with another acknowledge mode than {@code MANUAL} stops the start-up. Make one instance per logical consumer (a bean) and
 * keep it: on classic queues the delivery count of a message id is counted in it, shared by all the
 * container's channels and threads (quorum queues count on the broker).
 *
 * <p>When Idem's store fails the message is requeued after a pause (100 ms doubling to 30 s while
 * the store stays down), slept on the container's thread, and never dead-lettered for it (see
 * {@link RabbitMqIdempotentConsumer}). When made it logs one INFO line ({@code Idem: listener
 * '<name>' (<mode>, RabbitMQ queue '<queue>') keys from ..., dead letters to ...}), and it logs dead
 * letters and store failures at WARN, at most once a minute each (logger {@code
 * dev.idem.spring.listeners}).
 *
 * <p>Thread-safe.
 */
public final class IdemRabbitListener {

  private static final DefaultMessagePropertiesConverter PROPERTIES = new DefaultMessagePropertiesConverter();

  private final IdempotentConsumer consumer;
  private final RabbitMqIdempotentConsumer adapter;
  private final ListenerLog log;
  private final String queue;

  private IdemRabbitListener(String queue, IdempotentConsumer consumer, RabbitMqIdempotentConsumer.DeadLetter deadLetter) {
    this.consumer = Objects.requireNonNull(consumer, "consumer");
    this.adapter = RabbitMqIdempotentConsumer.forDeliveries(queue, consumer, deadLetter);
    this.queue = queue;
    this.log = new ListenerLog(consumer.name());
    log.started(consumer.leaseMode() ? "lease" : "transactional", "RabbitMQ queue '" + queue + "'",
        "the " + IdempotentConsumer.KEY_HEADER + " header, else the AMQP message-id", deadLetter.toString());
  }

  /**
   * @param queue the queue the listener consumes (for the description and the dead letter's {@code
   *     x-idem-queue} header)
   * @param consumer the idempotent consumer, in transactional or lease mode
   * @param deadLetter where dead letters go
   * @return the listener
   * @throws NullPointerException if an argument is {@code null}
   */
  public static IdemRabbitListener of(String queue, IdempotentConsumer consumer, RabbitMqIdempotentConsumer.DeadLetter deadLetter) {
    return new IdemRabbitListener(queue, consumer, deadLetter);
  }

  /** @return the idempotent consumer it runs */
  public IdempotentConsumer consumer() {
    return consumer;
  }

  /** @return the queue it was made for, never {@code null} */
  public String queue() {
    return queue;
  }

  /**
   * Handles one delivery and tells the broker, on {@code channel}, what became of it.
   *
   * @param message the delivery as the listener container received it, never {@code null}
   * @param channel the channel it came on (the listener method's {@code Channel} parameter), never
   *     {@code null}
   * @return what the broker was told (see {@link RabbitMqIdempotentConsumer#handle})
   * @throws IOException if the channel fails while acknowledging or rejecting; the broker then
   *     redelivers the message, and a redelivery of a committed message replays
   */
  public Verdict process(Message message, Channel channel) throws IOException {
    Objects.requireNonNull(message, "message");
    MessageProperties mp = message.getMessageProperties();
    AMQP.BasicProperties properties = PROPERTIES.fromMessageProperties(mp, StandardCharsets.UTF_8.name());
    Envelope envelope = new Envelope(mp.getDeliveryTag(), Boolean.TRUE.equals(mp.isRedelivered()),
        mp.getReceivedExchange(), mp.getReceivedRoutingKey());
    Verdict verdict = adapter.handle(channel, envelope, properties, message.getBody());
    log.verdict("queue '" + queue + "' (message-id " + mp.getMessageId() + ")", verdict);
    return verdict;
  }
}
