package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.rabbit.IdemRabbitListener;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * {@code @RabbitListener(ackMode = "MANUAL")} methods through {@link IdemRabbitListener}, on a real
 * RabbitMQ at 127.0.0.1:5672 (guest/guest), with the key table and the handler's effects in one
 * SQLite file. Each test makes its own classic queue and dead-letter queue and deletes them. Under
 * CI=true a missing broker is a failure; elsewhere the test is skipped.
 */
class RabbitListenerTest {

  static final String HOST = "127.0.0.1";
  static final int PORT = 5672;

  @TempDir Path dir;

  private Connection admin;
  private Channel channel;
  private String queue;
  private String deadLetterQueue;

  /** The application: a listener container, an idempotent consumer, a listener method. */
  @Configuration(proxyBeanMethods = false)
  @EnableRabbit
  static class App {
    /** Handler runs per message id, counted even when the handler fails. */
    static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

    @Bean
    CachingConnectionFactory rabbitConnectionFactory() {
      CachingConnectionFactory f = new CachingConnectionFactory(HOST, PORT);
      f.setUsername("guest");
      f.setPassword("guest");
      return f;
    }

    @Bean
    SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(CachingConnectionFactory cf) {
      SimpleRabbitListenerContainerFactory f = new SimpleRabbitListenerContainerFactory();
      f.setConnectionFactory(cf);
      f.setConcurrentConsumers(2); // two channels: the delivery count is shared between them
      f.setPrefetchCount(1);
      return f;
    }

    @Bean
    IdemRabbitListener ordersListener(IdemRabbitListeners listeners, Environment env) {
      return listeners.transactional("orders", env.getProperty("test.queue"), (connection, message) -> {
        RUNS.computeIfAbsent(message.messageId(), k -> new AtomicInteger()).incrementAndGet();
        String body = new String(message.body(), StandardCharsets.UTF_8);
        try (Statement s = connection.createStatement()) {
          s.executeUpdate("INSERT INTO effects(message_id) VALUES ('" + message.messageId() + "')");
        }
        if (body.startsWith("poison")) {
          throw new IllegalStateException("cannot handle " + body); // after the write: rolled back
        }
      }, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", env.getProperty("test.dlq")));
    }

    @Bean
    Orders orders(IdemRabbitListener ordersListener) {
      return new Orders(ordersListener);
    }
  }

  /** What an application writes. */
  static class Orders {
    final IdemRabbitListener listener;

    Orders(IdemRabbitListener listener) {
      this.listener = listener;
    }

    @RabbitListener(id = "orders", queues = "${test.queue}", ackMode = "MANUAL", autoStartup = "false")
    void onOrder(Message message, Channel channel) throws IOException {
      listener.process(message, channel);
    }
  }

  /** A second method on the Idem listener's queue, whose container acknowledges by itself. */
  static class AutoAcking {
    @RabbitListener(id = "auto-acking", queues = "${test.queue}", ackMode = "AUTO", autoStartup = "false")
    void on(Message message) {
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class AutoAckingApp {
    @Bean
    AutoAcking autoAcking() {
      return new AutoAcking();
    }
  }

  @BeforeEach
  void broker() throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost(HOST);
    f.setPort(PORT);
    f.setUsername("guest");
    f.setPassword("guest");
    f.setConnectionTimeout(5000);
    try {
      admin = f.newConnection("idem-starter-test");
    } catch (IOException | TimeoutException e) {
      String message = "RabbitMQ is not reachable at " + HOST + ":" + PORT + " (" + e + ")";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      System.err.println("[idem-spring-boot-starter] SKIPPED: " + message);
      Assumptions.abort(message);
    }
    channel = admin.createChannel();
    String name = "idem.starter.test." + UUID.randomUUID().toString().substring(0, 8);
    queue = name + ".q";
    deadLetterQueue = name + ".dlq";
    channel.queueDeclare(queue, true, false, false, null); // classic: Idem counts deliveries
    channel.queueDeclare(deadLetterQueue, true, false, false, null);
    App.RUNS.clear();
  }

  @AfterEach
  void deleteQueues() throws Exception {
    if (admin != null) {
      channel.queueDelete(queue);
      channel.queueDelete(deadLetterQueue);
      admin.close();
    }
  }

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(App.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4",
            "test.queue=" + queue, "test.dlq=" + deadLetterQueue);
  }

  private void publish(String messageId, String body) throws IOException {
    channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(messageId).deliveryMode(2).build(),
        body.getBytes(StandardCharsets.UTF_8));
  }

  private static void createEffects(ApplicationContext ctx) throws Exception {
    try (java.sql.Connection c = ctx.getBean(DataSource.class).getConnection(); Statement s = c.createStatement()) {
      s.executeUpdate("CREATE TABLE effects(message_id TEXT NOT NULL)");
    }
  }

  private static int effects(ApplicationContext ctx, String messageId) throws Exception {
    try (java.sql.Connection c = ctx.getBean(DataSource.class).getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM effects WHERE message_id = '" + messageId + "'")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("not within 30 s: " + what);
      }
      Thread.sleep(50);
    }
  }

  /** Ready plus unacknowledged: a stopped container returns its unacknowledged deliveries. */
  private long messagesLeftAfterStop(ApplicationContext ctx) throws IOException {
    ctx.getBean(RabbitListenerEndpointRegistry.class).getListenerContainer("orders").stop();
    return channel.queueDeclarePassive(queue).getMessageCount();
  }

  @Test
  void aRedeliveryAfterTheCommitBeforeTheAckRunsNothingAndIsAcked() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      createEffects(ctx);
      publish("order-1", "{\"order\":1}");
      // a consumer takes the message, commits its effect and the key, and its channel closes
      // before the ack: the broker redelivers it
      try (Channel crashed = admin.createChannel()) {
        GetResponse delivery = crashed.basicGet(queue, false);
        assertThat(delivery).isNotNull();
        Verdict first = ctx.getBean(IdemRabbitListener.class).consumer().process(
            new InboundMessage("order-1", Map.of(), delivery.getBody(), 1, "queue '" + queue + "'"));
        assertThat(first.action()).as(String.valueOf(first.reason())).isEqualTo(Verdict.Action.ACK);
      }
      assertThat(effects(ctx, "order-1")).isEqualTo(1);
      assertThat(channel.queueDeclarePassive(queue).getMessageCount()).isEqualTo(1);

      ctx.getBean(RabbitListenerEndpointRegistry.class).getListenerContainer("orders").start();
      await(() -> {
        try {
          return channel.queueDeclarePassive(queue).getMessageCount() == 0;
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
      }, "the redelivery is taken");
      Thread.sleep(500);
      assertThat(messagesLeftAfterStop(ctx)).as("the redelivery was acknowledged").isZero();
      assertThat(effects(ctx, "order-1")).as("the redelivery ran nothing").isEqualTo(1);
      assertThat(App.RUNS.get("order-1").get()).isEqualTo(1);
    });
  }

  @Test
  void aFailingHandlerIsRedeliveredThenDeadLetteredWithTheReason() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      createEffects(ctx);
      int max = ctx.getBean(IdemRabbitListener.class).consumer().maxDeliveries();
      publish("order-2", "poison pill");
      publish("order-3", "{\"order\":3}");
      ctx.getBean(RabbitListenerEndpointRegistry.class).getListenerContainer("orders").start();

      GetResponse[] dead = new GetResponse[1];
      await(() -> {
        try {
          dead[0] = dead[0] != null ? dead[0] : channel.basicGet(deadLetterQueue, true);
          return dead[0] != null && effects(ctx, "order-3") == 1;
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, "the poison message is dead-lettered and the good one handled");
      Thread.sleep(500);
      assertThat(messagesLeftAfterStop(ctx)).as("nothing left in the queue, nothing unacknowledged").isZero();

      assertThat(dead[0].getProps().getMessageId()).isEqualTo("order-2");
      assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("poison pill");
      Map<String, Object> headers = dead[0].getProps().getHeaders();
      assertThat(String.valueOf(headers.get(RabbitMqIdempotentConsumer.REASON_HEADER))).contains("cannot handle poison pill");
      assertThat(String.valueOf(headers.get("x-idem-queue"))).isEqualTo(queue);
      assertThat(((Number) headers.get("x-idem-deliveries")).intValue()).isEqualTo(max);
      assertThat(App.RUNS.get("order-2").get()).as("run once per delivery, up to the bound").isEqualTo(max);
      assertThat(effects(ctx, "order-2")).as("each failed run rolled back").isZero();
      assertThat(channel.queueDeclarePassive(deadLetterQueue).getMessageCount()).as("dead-lettered once").isZero();
    });
  }

  @Test
  void aDeadLetterThatNoQueueTakesIsRequeuedNotDropped() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      IdemRabbitListener nowhere = IdemRabbitListener.of(queue, ctx.getBean(IdemRabbitListener.class).consumer(),
          RabbitMqIdempotentConsumer.DeadLetter.toExchange("", deadLetterQueue + ".nobody"));
      // no message id: dead-lettered at once
      channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().deliveryMode(2).build(),
          "no id".getBytes(StandardCharsets.UTF_8));
      try (Channel consumerChannel = admin.createChannel()) {
        GetResponse delivery = consumerChannel.basicGet(queue, false);
        assertThat(delivery).isNotNull();
        MessageProperties mp = new MessageProperties();
        mp.setDeliveryTag(delivery.getEnvelope().getDeliveryTag());
        mp.setReceivedExchange(delivery.getEnvelope().getExchange());
        mp.setReceivedRoutingKey(delivery.getEnvelope().getRoutingKey());
        Verdict verdict = nowhere.process(new Message(delivery.getBody(), mp), consumerChannel);
        assertThat(verdict.action()).isEqualTo(Verdict.Action.RETRY);
        assertThat(verdict.reason()).startsWith("could not publish the dead letter; requeued: no idempotency key");
      }
      assertThat(channel.queueDeclarePassive(queue).getMessageCount()).as("requeued, not acknowledged").isEqualTo(1);
    });
  }

  /**
   * Regression: a container with acknowledge mode AUTO or NONE on the queue of an Idem listener
   * started without a word, and the broker dropped (NONE) or the container double-acknowledged (AUTO)
   * what Idem requeued. Now the start-up stops and says what is supported.
   */
  @Test
  void aContainerThatAcknowledgesByItselfOnAnIdemListenersQueueStopsTheStartUp() {
    app().withUserConfiguration(AutoAckingApp.class).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).rootCause().isInstanceOf(IdemUnsupportedException.class)
          .hasMessageContaining("container 'auto-acking' consumes queue '" + queue + "' of Idem listener 'orders' with"
              + " acknowledge mode AUTO")
          .hasMessageContaining("Supported: acknowledge mode MANUAL");
    });
    app().run(ctx -> assertThat(ctx).hasNotFailed()); // the MANUAL container alone starts
  }
}
