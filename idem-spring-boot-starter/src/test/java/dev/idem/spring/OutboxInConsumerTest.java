package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.MessageHandler;
import dev.idem.consumer.Verdict;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import dev.idem.outbox.Intent;
import dev.idem.outbox.IntentId;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.outbox.IdemOutbox;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import dev.idem.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The starter's {@link IdemOutbox} in a transactional consumer's handler: the intent commits with the
 * handler's row and the message's key, is named after the consumer's scope and the message's key, is
 * not recorded again by a redelivery, and is gone with a handler that fails after recording.
 */
class OutboxInConsumerTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.sqlite();

  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withPropertyValues("spring.datasource.url=" + DB.url(), "idem.table=keys_" + suffix,
            "idem.outbox.table=outbox_" + suffix, "idem.outbox.relay.enabled=false");
  }

  private static IdempotentConsumer consumer(ApplicationContext ctx, MessageHandler handler) {
    return ctx.getBean(IdemRabbitListeners.class)
        .transactional("billing", "unused", handler, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "unused.dlq"))
        .consumer();
  }

  private static InboundMessage delivery(String id, int count) {
    return new InboundMessage(id, Map.of(), ("pay " + id).getBytes(StandardCharsets.UTF_8), count, "test");
  }

  @Test
  void aHandlersIntentCommitsWithItsRowOnceAndNotAfterAFailure() {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      IdemOutbox outbox = ctx.getBean(IdemOutbox.class);
      jdbc.execute("CREATE TABLE IF NOT EXISTS effects_" + suffix + " (message_id TEXT)");
      MessageHandler handler = (connection, message) -> {
        jdbc.update("INSERT INTO effects_" + suffix + " (message_id) VALUES (?)", message.messageId());
        outbox.record(Intent.kafka("invoices", message.body()));
        if (message.messageId().startsWith("poison")) {
          throw new IllegalStateException("fails after recording");
        }
      };
      IdempotentConsumer billing = consumer(ctx, handler);
      assertThat(billing.process(delivery("pay-1", 1)).action()).isEqualTo(Verdict.Action.ACK);
      assertThat(billing.process(delivery("pay-1", 2)).action()).isEqualTo(Verdict.Action.ACK); // redelivery replays
      assertThat(billing.process(delivery("poison-1", 1)).action()).isEqualTo(Verdict.Action.RETRY);

      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM effects_" + suffix, Long.class)).isEqualTo(1);
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox_" + suffix, Long.class)).isEqualTo(1);
      Map<String, Object> row = jdbc.queryForMap("SELECT id, principal, operation, idem_key FROM outbox_" + suffix);
      assertThat(row.get("principal")).isEqualTo("billing");
      assertThat(row.get("operation")).isEqualTo(IdempotentConsumer.OPERATION);
      assertThat(row.get("idem_key")).isEqualTo("pay-1");
      assertThat(row.get("id")).isEqualTo(IntentId.of(Scope.of("billing", IdempotentConsumer.OPERATION), IdempotencyKey.of("pay-1"), 0));
    });
  }
}
