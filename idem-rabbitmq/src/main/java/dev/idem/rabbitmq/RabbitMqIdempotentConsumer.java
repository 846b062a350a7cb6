package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Runs an {@link IdempotentConsumer} on a RabbitMQ queue with the plain Java client, with manual
 * acknowledgements: {@code basic.ack} only after the handler's transaction committed (or a
 * redelivery replayed), {@code basic.nack} with requeue after a failure, and dead-lettering after
 * the last allowed delivery or for a message that can never be handled.
 *
 * <pre>{@code
 * channel.basicQos(10);
 * new RabbitMqIdempotentConsumer(channel, "billing.orders", consumer,
 *     RabbitMqIdempotentConsumer.DeadLetter.toExchange("billing.dlx", "billing.orders")).start();
 * }</pre>
 *
 * <p>The key is the AMQP {@code message-id} property (or an {@code Idempotency-Key} header). The
 * delivery count is the broker's {@code x-delivery-count} header plus one where the queue keeps it
 * (quorum queues); on classic queues it is counted in this process per message id (bounded to the
 * last 10,000 ids), so after a restart, or with several consumer processes on one queue, a failing
 * message may get more deliveries than the bound before it is dead-lettered. Prefer quorum queues.
 *
 * <p>When Idem's store failed ({@link Verdict#storeUnavailable()}) the message is requeued after
 * the verdict's {@link Verdict#retryAfter()} (100 ms doubling to 30 s while the store stays down),
 * slept on the consumer thread, so that a database outage does not spin; that delivery is not
 * counted towards {@link IdempotentConsumer#maxDeliveries()} (on quorum queues it is subtracted
 * from the broker's count, remembered in this process for the last 10,000 ids). Give a quorum
 * queue a {@code x-delivery-limit} high enough for an outage, or none: RabbitMQ 4 drops or
 * dead-letters by itself past its default of 20.
 *
 * <p>Dead-lettering ({@link DeadLetter}): either a copy is published, persistent and confirmed, to
 * a dead-letter exchange with the reason in the {@code x-idem-dead-reason} header (and the original
 * exchange, routing key, queue and delivery count), and the original is then acknowledged (a copy
 * that no queue takes comes back, and the original is requeued instead, never dropped); or the
 * message is rejected without requeue ({@code basic.nack requeue=false}) so the queue's own {@code
 * x-dead-letter-exchange} takes it (RabbitMQ records {@code x-death}, but not Idem's reason, and
 * discards the message if the queue has no dead-letter exchange). In the first way a crash between
 * the confirm and the acknowledgement dead-letters the message twice, with the same {@code
 * message-id}.
 *
 * <p>Callbacks run on the channel's consumer thread, one at a time, as the client guarantees. An
 * adapter made by {@link #forDeliveries} is thread-safe: {@link #handle} and the verdict listener
 * may run on several threads at once.
 */
public final class RabbitMqIdempotentConsumer extends DefaultConsumer {

  /** The header of a dead-lettered copy that gives the reason. */
  public static final String REASON_HEADER = "x-idem-dead-reason";

  private static final int REMEMBERED = 10_000;

  private final String queue;
  private final IdempotentConsumer consumer;
  private final DeadLetter deadLetter;
  private final Map<String, Integer> deliveries = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
      return size() > REMEMBERED;
    }
  };
  /** Deliveries of a message id that Idem's store failed, which do not count towards the bound. */
  private final Map<String, Integer> uncounted = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
      return size() > REMEMBERED;
    }
  };
  private @Nullable Channel deadLetterChannel;
  private volatile boolean deadLetterReturned; // basic.return of the dead letter being published
  private volatile BiConsumer<InboundMessage, Verdict> listener = (m, v) -> { };

  /**
   * @param channel the channel to consume on, never {@code null}
   * @param queue the queue to consume from
   * @param consumer the idempotent consumer
   * @param deadLetter where dead letters go
   */
  public RabbitMqIdempotentConsumer(Channel channel, String queue, IdempotentConsumer consumer, DeadLetter deadLetter) {
    super(Objects.requireNonNull(channel, "channel"));
    this.queue = Objects.requireNonNull(queue, "queue");
    this.consumer = Objects.requireNonNull(consumer, "consumer");
    this.deadLetter = Objects.requireNonNull(deadLetter, "deadLetter");
  }

  private RabbitMqIdempotentConsumer(String queue, IdempotentConsumer consumer, DeadLetter deadLetter) {
    super(null);
    this.queue = Objects.requireNonNull(queue, "queue");
    this.consumer = Objects.requireNonNull(consumer, "consumer");
    this.deadLetter = Objects.requireNonNull(deadLetter, "deadLetter");
  }

  /**
   * An adapter for deliveries that another container receives (a Spring AMQP listener container,
   * say) and hands to {@link #handle} with the channel they came on. The per-message-id delivery
   * count of classic queues is kept in this instance, so it is shared by every channel and
   * consumer thread that calls {@link #handle}: make one per logical consumer and keep it.
   * {@link #start} is not available on it.
   *
   * @param queue the queue the deliveries come from; used in the description of a message and in
   *     the {@code x-idem-queue} header of its dead letter
   * @param consumer the idempotent consumer
   * @param deadLetter where dead letters go
   * @return the adapter, thread-safe
   * @throws NullPointerException if an argument is {@code null}
   */
  public static RabbitMqIdempotentConsumer forDeliveries(String queue, IdempotentConsumer consumer, DeadLetter deadLetter) {
    return new RabbitMqIdempotentConsumer(queue, consumer, deadLetter);
  }

  /**
   * Starts consuming with manual acknowledgements.
   *
   * @return the consumer tag
   * @throws IOException if the broker refuses
   */
  public String start() throws IOException {
    if (getChannel() == null) {
      throw new IllegalStateException("made by forDeliveries: no channel of its own to consume on; call handle(...)");
    }
    return getChannel().basicConsume(queue, false, this);
  }

  /**
   * @param listener told of each message and its verdict after the broker was told (acknowledged,
   *     requeued or dead-lettered), on the consumer thread; for metrics and logs. It must not throw.
   * @return this consumer
   */
  public RabbitMqIdempotentConsumer onVerdict(BiConsumer<InboundMessage, Verdict> listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    return this;
  }

  /** Where a dead letter goes. Immutable. */
  public static final class DeadLetter {
    private final @Nullable String exchange;
    private final @Nullable String routingKey;

    private DeadLetter(@Nullable String exchange, @Nullable String routingKey) {
      this.exchange = exchange;
      this.routingKey = routingKey;
    }

    /**
     * @param exchange the dead-letter exchange ({@code ""} for the default exchange, with the
     *     dead-letter queue's name as the routing key)
     * @param routingKey the routing key of the copies
     * @return publish a confirmed copy with the reason, then acknowledge the original
     */
    public static DeadLetter toExchange(String exchange, String routingKey) {
      return new DeadLetter(Objects.requireNonNull(exchange, "exchange"), Objects.requireNonNull(routingKey, "routingKey"));
    }

    /** @return reject without requeue, to the queue's own {@code x-dead-letter-exchange} */
    public static DeadLetter rejectToQueueDeadLetterExchange() {
      return new DeadLetter(null, null);
    }

    /** @return where dead letters go, for logs */
    @Override
    public String toString() {
      return exchange == null ? "the queue's own x-dead-letter-exchange (rejected without requeue)"
          : "exchange '" + exchange + "' routing key '" + routingKey + "'";
    }
  }

  @Override
  public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
      throws IOException {
    handle(getChannel(), envelope, properties, body);
  }

  /**
   * Handles one delivery received on {@code channel} with manual acknowledgement, and then
   * acknowledges, requeues or dead-letters it on that channel, as the {@link Verdict} says: the
   * same as a delivery to {@link #start}'s consumer. Safe to call from several threads, each with
   * the delivery's own channel.
   *
   * @param channel the channel the delivery came on (its delivery tag belongs to it), never {@code
   *     null}; dead letters are published on a confirmed channel of the same connection
   * @param envelope the delivery's tag, redelivered flag, exchange and routing key
   * @param properties the message's properties ({@code message-id}, headers)
   * @param body the body, never {@code null}
   * @return what the broker was told: {@code ACK}, {@code RETRY} (requeued, also when a dead letter
   *     could not be published) or {@code DEAD_LETTER}
   * @throws IOException if the channel fails while acknowledging or rejecting
   */
  public Verdict handle(Channel channel, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
      throws IOException {
    Objects.requireNonNull(channel, "channel");
    Map<String, String> headers = new HashMap<>();
    if (properties.getHeaders() != null) {
      properties.getHeaders().forEach((k, v) -> {
        if (v != null) {
          headers.put(k, v.toString());
        }
      });
    }
    String id = properties.getMessageId();
    InboundMessage message =
        new InboundMessage(id, headers, body, deliveryCount(id, envelope, properties), "queue '" + queue + "'");
    Verdict verdict = consumer.process(message);
    long tag = envelope.getDeliveryTag();
    switch (verdict.action()) {
      case ACK:
        channel.basicAck(tag, false);
        forget(id);
        break;
      case RETRY:
        if (verdict.storeUnavailable()) {
          notCounted(id);
          pause(verdict.pause(Duration.ZERO)); // Idem's store is down: requeue after its retryAfter, not at once
        }
        channel.basicNack(tag, false, true);
        break;
      case DEAD_LETTER:
        if (deadLetter.exchange == null) {
          channel.basicNack(tag, false, false);
        } else if (publishDeadLetter(channel, envelope, properties, body,
            Objects.requireNonNull(verdict.reason(), "a dead letter has its reason"), message.deliveryCount())) {
          channel.basicAck(tag, false);
        } else {
          channel.basicNack(tag, false, true); // not dead-lettered: keep it rather than lose it
          Verdict requeued = new Verdict(Verdict.Action.RETRY, null,
              "could not publish the dead letter; requeued: " + verdict.reason());
          listener.accept(message, requeued);
          return requeued;
        }
        forget(id);
        break;
      default:
        throw new IllegalStateException(verdict.action().toString());
    }
    listener.accept(message, verdict);
    return verdict;
  }

  private int deliveryCount(String id, Envelope envelope, AMQP.BasicProperties properties) {
    int counted = countedDeliveries(id, envelope, properties);
    if (id == null) {
      return counted;
    }
    synchronized (uncounted) {
      Integer skip = uncounted.get(id);
      return skip == null ? counted : Math.max(1, counted - skip);
    }
  }

  private void notCounted(String id) {
    if (id != null) {
      synchronized (uncounted) {
        uncounted.merge(id, 1, Integer::sum);
      }
    }
  }

  private static void pause(java.time.Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // requeue at once
    }
  }

  private int countedDeliveries(String id, Envelope envelope, AMQP.BasicProperties properties) {
    Object brokerCount = properties.getHeaders() == null ? null : properties.getHeaders().get("x-delivery-count");
    if (brokerCount instanceof Number) {
      return ((Number) brokerCount).intValue() + 1;
    }
    if (id == null) {
      return envelope.isRedeliver() ? 2 : 1;
    }
    synchronized (deliveries) {
      Integer seen = deliveries.get(id);
      int count = seen == null ? (envelope.isRedeliver() ? 2 : 1) : seen + 1;
      deliveries.put(id, count);
      return count;
    }
  }

  private void forget(String id) {
    if (id != null) {
      synchronized (deliveries) {
        deliveries.remove(id);
      }
      synchronized (uncounted) {
        uncounted.remove(id);
      }
    }
  }

  private synchronized boolean publishDeadLetter(
      Channel channel, Envelope envelope, AMQP.BasicProperties properties, byte[] body, String reason, int deliveryCount) {
    Map<String, Object> headers = new HashMap<>();
    if (properties.getHeaders() != null) {
      headers.putAll(properties.getHeaders());
    }
    headers.put(REASON_HEADER, reason.length() > 4000 ? reason.substring(0, 3997) + "..." : reason);
    headers.put("x-idem-consumer", consumer.name());
    headers.put("x-idem-queue", queue);
    headers.put("x-idem-exchange", envelope.getExchange());
    headers.put("x-idem-routing-key", envelope.getRoutingKey());
    headers.put("x-idem-deliveries", deliveryCount);
    AMQP.BasicProperties copy = properties.builder().headers(headers).deliveryMode(2).build();
    try {
      Channel ch = deadLetterChannel(channel);
      deadLetterReturned = false;
      ch.basicPublish(deadLetter.exchange, deadLetter.routingKey, true, copy, body);
      ch.waitForConfirmsOrDie(Duration.ofSeconds(10).toMillis());
      // A mandatory message that no queue takes is returned (basic.return) and then confirmed:
      // the confirm alone does not mean it was dead-lettered. The return comes first, on the
      // connection's thread that also delivers the confirm.
      return !deadLetterReturned;
    } catch (IOException | TimeoutException | RuntimeException e) {
      closeDeadLetterChannel();
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private synchronized Channel deadLetterChannel(Channel channel) throws IOException {
    if (deadLetterChannel != null && deadLetterChannel.getConnection() != channel.getConnection()) {
      closeDeadLetterChannel(); // the delivery came on another connection: publish on that one
    }
    if (deadLetterChannel == null || !deadLetterChannel.isOpen()) {
      deadLetterChannel = channel.getConnection().createChannel();
      deadLetterChannel.confirmSelect();
      deadLetterChannel.addReturnListener(returned -> deadLetterReturned = true);
    }
    return deadLetterChannel;
  }

  private synchronized void closeDeadLetterChannel() {
    if (deadLetterChannel != null && deadLetterChannel.isOpen()) {
      try {
        deadLetterChannel.close();
      } catch (IOException | TimeoutException | RuntimeException ignored) {
        // already closing
      }
    }
    deadLetterChannel = null;
  }
}
