package dev.idem.cli.queue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.GetResponse;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.lab.Lab;
import dev.idem.outbox.Intent;
import dev.idem.outbox.spi.IntentTransport;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.rabbitmq.RabbitMqTransport;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/** {@link LabBroker} on RabbitMQ with the plain Java client. */
final class RabbitMqLabBroker implements LabBroker {

  private static final String ROUTING_KEY = "lab";

  private final String url;
  private final Connection connection;
  private RabbitMqTransport transport;

  private RabbitMqLabBroker(String url, Connection connection) {
    this.url = url;
    this.connection = connection;
  }

  static RabbitMqLabBroker connect(String url) throws Unavailable {
    try {
      ConnectionFactory factory = new ConnectionFactory();
      factory.setUri(url);
      factory.setConnectionTimeout(5000);
      factory.setAutomaticRecoveryEnabled(false);
      return new RabbitMqLabBroker(url, factory.newConnection("idem-queue-lab"));
    } catch (Exception e) {
      throw new Unavailable("cannot connect to RabbitMQ at " + Lab.redact(url) + ": " + e, e);
    }
  }

  @Override
  public String kind() {
    return "rabbitmq";
  }

  @Override
  public String url() {
    return url;
  }

  @Override
  public String describe() {
    Object version = connection.getServerProperties().get("version");
    return "RabbitMQ " + (version == null ? "(version unknown)" : version.toString());
  }

  @Override
  public boolean dedupesById() {
    return false;
  }

  private static String queue(String destination, String variant) {
    return destination + "." + variant;
  }

  @Override
  public void declare(String destination) throws IOException {
    try (Channel ch = connection.createChannel()) {
      ch.exchangeDeclare(destination, "direct", true);
      for (String variant : List.of(NAIVE, PROTECTED)) {
        ch.queueDeclare(queue(destination, variant), true, false, false, Map.of("x-queue-type", "quorum"));
        ch.queueBind(queue(destination, variant), destination, ROUTING_KEY);
      }
      ch.queueDeclare(queue(destination, "dead"), true, false, false, null);
    } catch (TimeoutException e) {
      throw new IOException(e);
    }
  }

  @Override
  public void delete(String destination) {
    try (Channel ch = connection.createChannel()) {
      for (String variant : List.of(NAIVE, PROTECTED, "dead")) {
        ch.queueDelete(queue(destination, variant));
      }
      ch.exchangeDelete(destination);
    } catch (Exception ignored) {
      // best effort: the broker may be gone already
    }
  }

  @Override
  public Intent intent(String destination, byte[] body) {
    return Intent.rabbitMq(destination, ROUTING_KEY, body).withHeader("content-type", "application/json");
  }

  @Override
  public synchronized IntentTransport transport() {
    if (transport == null) {
      transport = new RabbitMqTransport(connection);
    }
    return transport;
  }

  @Override
  public void publish(String destination, String messageId, byte[] body) throws Exception {
    try (Channel ch = connection.createChannel()) {
      ch.confirmSelect();
      AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
          .deliveryMode(2).messageId(messageId).contentType("application/json").build();
      ch.basicPublish(destination, ROUTING_KEY, true, props, body);
      ch.waitForConfirmsOrDie(10_000);
    }
  }

  /** Ready messages in the protected queue (each variant's queue gets the same copies). */
  @Override
  public long stored(String destination) throws Exception {
    try (Channel ch = connection.createChannel()) {
      return ch.queueDeclarePassive(queue(destination, PROTECTED)).getMessageCount();
    }
  }

  @Override
  public InboundMessage takeWithoutAck(String destination, String variant, Duration wait) throws Exception {
    Channel ch = connection.createChannel(); // left open: the message stays unacknowledged
    long deadline = System.nanoTime() + wait.toNanos();
    while (true) {
      GetResponse r = ch.basicGet(queue(destination, variant), false);
      if (r != null) {
        return new InboundMessage(r.getProps().getMessageId(), headers(r.getProps()), r.getBody(),
            r.getEnvelope().isRedeliver() ? 2 : 1, "queue '" + queue(destination, variant) + "'");
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("no message in " + queue(destination, variant) + " within " + wait.toMillis() + " ms");
      }
      Thread.sleep(50);
    }
  }

  private static Map<String, String> headers(AMQP.BasicProperties props) {
    Map<String, String> headers = new HashMap<>();
    if (props.getHeaders() != null) {
      props.getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
    }
    return headers;
  }

  @Override
  public Consumption consumeNaive(String destination, NaiveHandler handler, int expected, Duration wait) throws Exception {
    AtomicInteger deliveries = new AtomicInteger();
    List<String> problems = new CopyOnWriteArrayList<>();
    Channel ch = connection.createChannel();
    try {
      ch.basicQos(1);
      ch.basicConsume(queue(destination, NAIVE), false, new DefaultConsumer(ch) {
        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) throws IOException {
          deliveries.incrementAndGet();
          try {
            handler.handle(new InboundMessage(props.getMessageId(), headers(props), body, 0, queue(destination, NAIVE)));
            getChannel().basicAck(envelope.getDeliveryTag(), false);
          } catch (Exception e) {
            problems.add("naive handler failed: " + e);
            getChannel().basicNack(envelope.getDeliveryTag(), false, false);
          }
        }
      });
      await(deliveries, expected, wait);
    } finally {
      ch.abort();
    }
    return new Consumption(deliveries.get(), List.copyOf(problems));
  }

  @Override
  public Consumption consumeProtected(String destination, IdempotentConsumer consumer, int expected, Duration wait)
      throws Exception {
    AtomicInteger deliveries = new AtomicInteger();
    List<String> problems = new CopyOnWriteArrayList<>();
    Channel ch = connection.createChannel();
    try {
      ch.basicQos(1);
      new RabbitMqIdempotentConsumer(ch, queue(destination, PROTECTED), consumer,
          RabbitMqIdempotentConsumer.DeadLetter.toExchange("", queue(destination, "dead")))
          .onVerdict((m, v) -> {
            if (v.action() != Verdict.Action.ACK) {
              problems.add(v.action() + ": " + v.reason());
            }
            deliveries.incrementAndGet();
          })
          .start();
      await(deliveries, expected, wait);
    } finally {
      ch.abort();
    }
    return new Consumption(deliveries.get(), List.copyOf(problems));
  }

  /** Waits for {@code expected} deliveries (or the deadline), then half a second for extra ones. */
  static void await(AtomicInteger deliveries, int expected, Duration wait) throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    while (deliveries.get() < expected && System.nanoTime() < deadline) {
      Thread.sleep(25);
    }
    Thread.sleep(500);
  }

  @Override
  public void close() {
    if (transport != null) {
      transport.close();
    }
    try {
      connection.close(5000);
    } catch (Exception ignored) {
      // closing anyway
    }
  }
}
