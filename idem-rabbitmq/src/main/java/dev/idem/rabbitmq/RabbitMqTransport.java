package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.ReturnListener;
import dev.idem.outbox.Intent;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Publishes {@link Intent.Kind#RABBITMQ} intents with the plain RabbitMQ Java client: persistent
 * messages ({@code delivery_mode 2}), {@code mandatory}, the intent's id as the AMQP {@code
 * message-id} property, and publisher confirms. An intent is delivered only when the broker
 * confirmed it ({@code basic.ack}) and did not return it as unroutable: a message that reaches no
 * queue is a failure to retry (and, once the attempts run out, a DEAD intent with the reason {@code
 * NO_ROUTE}), never a silent loss.
 *
 * <p>Uses one channel of the given connection, opened on first use and again after it closes. A
 * header {@code content-type} of the intent becomes the {@code content_type} property; other
 * headers become message headers. Thread-safe: {@link #deliver} is serialized.
 */
public final class RabbitMqTransport implements IntentTransport, AutoCloseable {

  private final Connection connection;
  private final Duration confirmTimeout;
  private @Nullable Channel channel;
  private enum Confirm { PENDING, ACK, NACK }

  /** Publish sequence number to the broker's answer, for the batch in flight. */
  private final ConcurrentSkipListMap<Long, Confirm> confirms = new ConcurrentSkipListMap<>();
  private final Map<String, String> returned = new ConcurrentHashMap<>();

  /**
   * @param connection an open connection, owned by the caller (not closed by this transport)
   * @param confirmTimeout how long a batch waits for the broker's confirms, from 1 ms
   */
  public RabbitMqTransport(Connection connection, Duration confirmTimeout) {
    this.connection = Objects.requireNonNull(connection, "connection");
    this.confirmTimeout = Objects.requireNonNull(confirmTimeout, "confirmTimeout");
    if (confirmTimeout.toMillis() < 1) {
      throw new IllegalArgumentException("confirmTimeout must be at least 1 ms");
    }
  }

  /** A transport that waits up to 10 seconds for confirms. */
  public RabbitMqTransport(Connection connection) {
    this(connection, Duration.ofSeconds(10));
  }

  @Override
  public Intent.Kind kind() {
    return Intent.Kind.RABBITMQ;
  }

  @Override
  public synchronized List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
    List<Delivery> out = new ArrayList<>(batch.size());
    Channel ch;
    try {
      ch = channel();
    } catch (IOException | RuntimeException e) {
      for (OutboxEntry entry : batch) {
        out.add(Delivery.retry(entry.id(), "cannot open a RabbitMQ channel: " + e));
      }
      return out;
    }
    confirms.clear();
    returned.clear();
    Map<String, Long> sequence = new HashMap<>();
    List<OutboxEntry> published = new ArrayList<>();
    for (OutboxEntry entry : batch) {
      Intent intent = entry.intent();
      try {
        long seq = ch.getNextPublishSeqNo();
        confirms.put(seq, Confirm.PENDING);
        ch.basicPublish(intent.target(), intent.route(), true, properties(entry), intent.body());
        sequence.put(entry.id(), seq);
        published.add(entry);
      } catch (IOException | RuntimeException e) {
        out.add(Delivery.retry(entry.id(), "publish failed: " + e));
      }
    }
    String confirmFailure = null;
    try {
      ch.waitForConfirms(confirmTimeout.toMillis());
    } catch (TimeoutException e) {
      confirmFailure = "no publisher confirm within " + confirmTimeout.toMillis() + " ms";
    } catch (RuntimeException e) {
      confirmFailure = "confirms lost: " + e;
    }
    for (OutboxEntry entry : published) {
      String returnReason = returned.get(entry.id());
      Confirm answer = confirms.get(sequence.get(entry.id()));
      if (returnReason != null) {
        out.add(Delivery.retry(entry.id(), "unroutable: " + returnReason));
      } else if (answer == Confirm.ACK) {
        out.add(Delivery.delivered(entry.id()));
      } else if (answer == Confirm.NACK) {
        out.add(Delivery.retry(entry.id(), "the broker refused it (basic.nack)"));
      } else {
        out.add(Delivery.retry(entry.id(), confirmFailure == null ? "not confirmed" : confirmFailure));
      }
    }
    if (confirmFailure != null) {
      closeChannel(); // a new channel starts the next batch with fresh sequence numbers
    }
    return out;
  }

  private static AMQP.BasicProperties properties(OutboxEntry entry) {
    Map<String, Object> headers = new HashMap<>();
    String contentType = null;
    for (Map.Entry<String, String> h : entry.intent().headers()) {
      if (h.getKey().equalsIgnoreCase("content-type")) {
        contentType = h.getValue();
      } else {
        headers.put(h.getKey(), h.getValue());
      }
    }
    return new AMQP.BasicProperties.Builder()
        .deliveryMode(2)
        .messageId(entry.id())
        .contentType(contentType)
        .headers(headers.isEmpty() ? null : headers)
        .build();
  }

  private Channel channel() throws IOException {
    if (channel != null && channel.isOpen()) {
      return channel;
    }
    Channel ch = connection.createChannel();
    ch.confirmSelect();
    ch.addConfirmListener(new ConfirmListener() {
      @Override
      public void handleAck(long deliveryTag, boolean multiple) {
        mark(deliveryTag, multiple, true);
      }

      @Override
      public void handleNack(long deliveryTag, boolean multiple) {
        mark(deliveryTag, multiple, false);
      }
    });
    ch.addReturnListener((ReturnListener) (replyCode, replyText, exchange, routingKey, properties, body) -> {
      if (properties.getMessageId() != null) {
        returned.put(properties.getMessageId(), replyText + " (" + replyCode + ") exchange '" + exchange
            + "' routing key '" + routingKey + "'");
      }
    });
    channel = ch;
    return ch;
  }

  private void mark(long tag, boolean multiple, boolean ack) {
    Confirm answer = ack ? Confirm.ACK : Confirm.NACK;
    Map<Long, Confirm> answered = multiple ? confirms.headMap(tag, true) : confirms.subMap(tag, true, tag, true);
    answered.replaceAll((seq, state) -> state == Confirm.PENDING ? answer : state);
  }

  private void closeChannel() {
    Channel ch = channel;
    channel = null;
    if (ch != null && ch.isOpen()) {
      try {
        ch.close();
      } catch (IOException | TimeoutException | RuntimeException ignored) {
        // already closing
      }
    }
  }

  /** Closes the transport's channel; the connection stays the caller's. */
  @Override
  public synchronized void close() {
    closeChannel();
  }
}
