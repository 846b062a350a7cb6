package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.consumer.InboundMessage;
import dev.idem.consumer.Verdict;
import dev.idem.rabbitmq.RabbitMqIdempotentConsumer;
import dev.idem.spring.observation.ObservationIdemListener;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * docs/operations.md: every attempt is one observation on every engine, the consumers' in both
 * modes included. Was: the transactional consumer's engine was made with no listener at all, so
 * its attempts had neither an observation nor the {@code idem.*} counters.
 */
class ConsumerObservationsTest {

  @TempDir Path dir;

  static final Queue<Observation.Context> STOPPED = new ConcurrentLinkedQueue<>();

  @Configuration(proxyBeanMethods = false)
  static class Observed {
    @Bean
    ObservationRegistry observationRegistry() {
      return ObservationsTest.recording(STOPPED);
    }
  }

  private ApplicationContextRunner app() {
    STOPPED.clear();
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(Observed.class)
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4");
  }

  private static InboundMessage delivery(String id, int count) {
    return new InboundMessage(id, Map.of(), ("pay " + id).getBytes(StandardCharsets.UTF_8), count, "test");
  }

  private static String describe(Observation.Context c) {
    return c.getName() + " " + c.getLowCardinalityKeyValue(ObservationIdemListener.MODE).getValue() + " "
        + c.getLowCardinalityKeyValue(ObservationIdemListener.OUTCOME).getValue();
  }

  @Test
  void aTransactionalConsumersAttemptsAreObservations() {
    app().run(ctx -> {
      var consumer = ctx.getBean(IdemRabbitListeners.class)
          .transactional("pay-tx", "unused", (connection, message) -> {}, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "dlq"))
          .consumer();
      STOPPED.clear();
      assertThat(consumer.process(delivery("m-1", 1)).action()).isEqualTo(Verdict.Action.ACK);
      assertThat(consumer.process(delivery("m-1", 2)).action()).isEqualTo(Verdict.Action.ACK);
      assertThat(STOPPED).extracting(ConsumerObservationsTest::describe)
          .containsExactly("idem.attempt transactional executed", "idem.attempt transactional replayed");
    });
  }

  @Test
  void aLeaseConsumersAttemptsAreObservations() {
    app().run(ctx -> {
      var consumer = ctx.getBean(IdemRabbitListeners.class)
          .lease("pay-lease", "unused", (context, message) -> {}, RabbitMqIdempotentConsumer.DeadLetter.toExchange("", "dlq"))
          .consumer();
      STOPPED.clear();
      assertThat(consumer.process(delivery("m-2", 1)).action()).isEqualTo(Verdict.Action.ACK);
      assertThat(STOPPED).extracting(ConsumerObservationsTest::describe).first().asString().startsWith("idem.attempt lease ");
    });
  }
}
