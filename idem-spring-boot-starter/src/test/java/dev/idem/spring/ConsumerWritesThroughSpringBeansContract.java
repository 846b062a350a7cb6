package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.MessageHandler;
import dev.idem.consumer.Verdict;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import dev.idem.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.annotation.Transactional;

/**
 * A transactional idempotent consumer made by the starter, whose handler writes through Spring's
 * beans rather than the {@code Connection} it is given: the {@code JdbcTemplate} bean, a {@code
 * JdbcClient}, a {@code @Transactional} service. Was: those writes ran on another pooled connection
 * in auto-commit, outside the transaction that records the message's key, so a redelivery after a
 * crash before the acknowledgement wrote a second row (101 rows for 100 messages) and a handler that
 * wrote and then failed left one row per delivery. Now each message is one Spring transaction on the
 * application's transaction manager, as each HTTP request is. Every backend runs this by
 * subclassing; the path is broker-independent (Kafka, RabbitMQ and JetStream listeners all call
 * {@link IdempotentConsumer#process}), so the messages are handed to it directly.
 */
abstract class ConsumerWritesThroughSpringBeansContract {

  /** @return the database under test */
  protected abstract TestDatabase database();

  /** How a handler writes its row. */
  enum Style { JDBC_TEMPLATE, JDBC_CLIENT, TRANSACTIONAL_SERVICE, GIVEN_CONNECTION }

  /** A service whose method joins the caller's transaction, as application services do. */
  static class Payments {
    private final JdbcTemplate jdbc;

    Payments(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Transactional
    public void record(String messageId) {
      jdbc.update("INSERT INTO effects(message_id) VALUES (?)", messageId);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    Payments payments(JdbcTemplate jdbc) {
      return new Payments(jdbc);
    }
  }

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(App.class)
        .withPropertyValues("spring.datasource.url=" + database().url(),
            "spring.datasource.hikari.maximum-pool-size=4", "idem.table=keys_" + suffix());
  }

  private static String suffix() {
    return UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  }

  private static MessageHandler writing(ApplicationContext ctx, Style style, AtomicInteger runs, boolean fail) {
    DataSource ds = ctx.getBean(DataSource.class);
    JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
    Payments payments = ctx.getBean(Payments.class);
    return (connection, message) -> {
      runs.incrementAndGet();
      switch (style) {
        case JDBC_TEMPLATE -> jdbc.update("INSERT INTO effects(message_id) VALUES (?)", message.messageId());
        case JDBC_CLIENT -> JdbcClient.create(ds).sql("INSERT INTO effects(message_id) VALUES (?)")
            .param(message.messageId()).update();
        case TRANSACTIONAL_SERVICE -> payments.record(message.messageId());
        case GIVEN_CONNECTION -> {
          try (var st = connection.prepareStatement("INSERT INTO effects(message_id) VALUES (?)")) {
            st.setString(1, message.messageId());
            st.executeUpdate();
          }
        }
        default -> throw new IllegalStateException(style.toString());
      }
      if (fail) {
        throw new IllegalStateException("the handler fails after its write");
      }
    };
  }

  private static IdempotentConsumer consumer(ApplicationContext ctx, String name, MessageHandler handler) {
    return ctx.getBean(IdemRabbitListeners.class)
        .transactional(name, "unused", handler, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "unused.dlq"))
        .consumer();
  }

  private static InboundMessage delivery(String id, int count) {
    return new InboundMessage(id, Map.of(), ("pay " + id).getBytes(StandardCharsets.UTF_8), count, "test");
  }

  @ParameterizedTest
  @EnumSource(Style.class)
  void redeliveriesOfAHandledMessageWriteNothingMore(Style style) throws Exception {
    appRun(ctx -> {
      AtomicInteger runs = new AtomicInteger();
      IdempotentConsumer consumer = consumer(ctx, "pay-" + style.name().toLowerCase().replace('_', '-'), writing(ctx, style, runs, false));
      // 100 distinct messages, each delivered once, then every one redelivered (a kill -9 after the
      // commit and before the acknowledgement), and message 40 three more times
      for (int i = 0; i < 100; i++) {
        assertThat(consumer.process(delivery("pay-" + i, 1)).action()).isEqualTo(Verdict.Action.ACK);
      }
      for (int i = 0; i < 100; i++) {
        assertThat(consumer.process(delivery("pay-" + i, 2)).action()).isEqualTo(Verdict.Action.ACK);
      }
      for (int d = 3; d <= 5; d++) {
        assertThat(consumer.process(delivery("pay-40", d)).action()).isEqualTo(Verdict.Action.ACK);
      }
      assertThat(runs).as("handler runs").hasValue(100);
      assertThat(rows(ctx, "pay-%")).as("rows for 100 distinct messages").isEqualTo(100);
      assertThat(rows(ctx, "pay-40")).isEqualTo(1);
    });
  }

  @ParameterizedTest
  @EnumSource(Style.class)
  void aHandlerThatWritesAndThenFailsLeavesNoRowOnAnyDelivery(Style style) throws Exception {
    appRun(ctx -> {
      AtomicInteger runs = new AtomicInteger();
      IdempotentConsumer consumer = consumer(ctx, "fail-" + style.name().toLowerCase().replace('_', '-'), writing(ctx, style, runs, true));
      List<Verdict.Action> actions = new java.util.ArrayList<>();
      for (int d = 1; d <= consumer.maxDeliveries(); d++) {
        actions.add(consumer.process(delivery("poison-1", d)).action());
      }
      assertThat(actions).containsExactly(Verdict.Action.RETRY, Verdict.Action.RETRY, Verdict.Action.RETRY,
          Verdict.Action.RETRY, Verdict.Action.DEAD_LETTER);
      assertThat(runs).hasValue(5);
      assertThat(rows(ctx, "poison-1")).as("rows left by a failing handler").isZero();
    });
  }

  private interface Body {
    void run(ApplicationContext ctx) throws Exception;
  }

  private void appRun(Body body) {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      try (Connection c = ctx.getBean(DataSource.class).getConnection(); Statement s = c.createStatement()) {
        s.executeUpdate("CREATE TABLE effects(message_id VARCHAR(100) NOT NULL)");
      }
      try {
        body.run(ctx);
      } finally {
        try (Connection c = ctx.getBean(DataSource.class).getConnection(); Statement s = c.createStatement()) {
          s.executeUpdate("DROP TABLE effects");
        }
      }
    });
  }

  private static int rows(ApplicationContext ctx, String like) throws Exception {
    try (Connection c = ctx.getBean(DataSource.class).getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM effects WHERE message_id LIKE '" + like + "'")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
