package dev.idem.outbox;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.outbox.spi.IntentTransport;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.rabbitmq.RabbitMqTransport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * RabbitMQ at {@code IDEM_TEST_RABBITMQ_URI} (default {@code amqp://guest:guest@127.0.0.1:5672}):
 * per test a direct exchange, a quorum queue bound to it (the broker counts deliveries), and a
 * dead-letter queue, all deleted afterwards.
 */
final class RabbitMqFixture implements BrokerFixture {

  private final Connection connection;
  private final Channel admin;
  private final String exchange;
  private final String queue;
  private final String deadLetterQueue;
  private final RabbitMqTransport transport;
  private final List<Connection> extra = new ArrayList<>();

  RabbitMqFixture() throws Exception {
    String uri = System.getenv().getOrDefault("IDEM_TEST_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672");
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(uri);
    factory.setConnectionTimeout(5000);
    try {
      connection = factory.newConnection("idem-outbox-test");
    } catch (Exception e) {
      throw BrokerFixture.unreachable("RabbitMQ at " + uri, e);
    }
    this.factory = factory;
    String name = "idem.test." + UUID.randomUUID().toString().substring(0, 8);
    exchange = name + ".x";
    queue = name + ".q";
    deadLetterQueue = name + ".dlq";
    admin = connection.createChannel();
    admin.exchangeDeclare(exchange, "direct", true);
    admin.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
    admin.queueBind(queue, exchange, "k");
    admin.queueDeclare(deadLetterQueue, true, false, false, null);
    transport = new RabbitMqTransport(connection);
  }

  private final ConnectionFactory factory;

  @Override
  public boolean dedupesById() {
    return false;
  }

  @Override
  public Intent intent(byte[] body) {
    return Intent.rabbitMq(exchange, "k", body).withHeader("content-type", "application/json");
  }

  @Override
  public Intent unroutableIntent(byte[] body) {
    return Intent.rabbitMq(exchange, "nobody-binds-this", body);
  }

  @Override
  public IntentTransport transport() {
    return transport;
  }

  @Override
  public List<Received> published(int atLeast, Duration wait) throws Exception {
    List<Received> out = new ArrayList<>();
    drain(queue, out, atLeast, wait);
    return out;
  }

  private void drain(String from, List<Received> out, int atLeast, Duration wait) throws Exception {
    long deadline = System.nanoTime() + wait.toNanos();
    try (Channel ch = connection.createChannel()) {
      while (true) {
        GetResponse r = ch.basicGet(from, true);
        if (r != null) {
          Map<String, String> headers = new HashMap<>();
          if (r.getProps().getHeaders() != null) {
            r.getProps().getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
          }
          out.add(new Received(r.getProps().getMessageId(), r.getBody(), headers));
          continue;
        }
        if (out.size() >= atLeast || System.nanoTime() > deadline) {
          return;
        }
        Thread.sleep(50);
      }
    }
  }

  @Override
  public void publishRaw(String id, byte[] body) throws Exception {
    AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().deliveryMode(2).messageId(id).build();
    admin.basicPublish(exchange, "k", props, body);
  }

  @Override
  public AutoCloseable consume(IdempotentConsumer consumer, Consumer<Verdict> verdicts) throws Exception {
    Channel ch = connection.createChannel();
    ch.basicQos(1);
    new RabbitMqIdempotentConsumer(ch, queue, consumer,
        RabbitMqIdempotentConsumer.DeadLetter.toExchange("", deadLetterQueue))
        .onVerdict((m, v) -> verdicts.accept(v))
        .start();
    return ch::close;
  }

  @Override
  public void processThenCrashBeforeAck(IdempotentConsumer consumer) throws Exception {
    Connection doomed = factory.newConnection("idem-outbox-test-doomed");
    Channel ch = doomed.createChannel();
    GetResponse r = null;
    for (int i = 0; i < 100 && r == null; i++) {
      r = ch.basicGet(queue, false);
      if (r == null) {
        Thread.sleep(50);
      }
    }
    if (r == null) {
      throw new IllegalStateException("no message to process");
    }
    Verdict verdict = consumer.process(new InboundMessage(r.getProps().getMessageId(), Map.of(), r.getBody(), 1, queue));
    if (verdict.action() != Verdict.Action.ACK) {
      throw new IllegalStateException("expected the first delivery to commit, was " + verdict);
    }
    doomed.abort(); // no ack: the broker requeues the message
  }

  /** Ready messages only: stop the consumers first, so that unacknowledged ones count again. */
  @Override
  public long outstanding() throws Exception {
    return admin.queueDeclarePassive(queue).getMessageCount();
  }

  @Override
  public List<Received> deadLetters(int atLeast, Duration wait) throws Exception {
    List<Received> out = new ArrayList<>();
    drain(deadLetterQueue, out, atLeast, wait);
    return out;
  }

  @Override
  public String reasonHeader() {
    return RabbitMqIdempotentConsumer.REASON_HEADER;
  }

  @Override
  public void close() throws Exception {
    transport.close();
    try (Channel ch = connection.createChannel()) {
      ch.queueDelete(queue);
      ch.queueDelete(deadLetterQueue);
      ch.exchangeDelete(exchange);
    } finally {
      for (Connection c : extra) {
        c.abort();
      }
      connection.close();
    }
  }
}
