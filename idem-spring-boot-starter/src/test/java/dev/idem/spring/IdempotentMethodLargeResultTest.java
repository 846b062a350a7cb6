package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.ResponseNotStoredException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link Idempotent} methods whose serialized result is longer than {@code idem.max-response-size}:
 * the method runs once per key in both modes; the first call gets its result, a repetition gets
 * {@link ResponseNotStoredException}, never a second run.
 */
class IdempotentMethodLargeResultTest {

  @TempDir Path dir;

  /** Returns a text of {@code size} characters (about {@code size + 2} bytes of JSON). */
  public static class Exports {
    final AtomicInteger runs = new AtomicInteger();

    @Idempotent(operation = "export")
    public String export(@Idempotent.Key String key, int size) {
      return Integer.toString(runs.incrementAndGet()).repeat(size);
    }

    /** Through the proxy: its own fields are not the target's. */
    public int runs() {
      return runs.get();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class ExportsConfig {
    @Bean
    Exports exports() {
      return new Exports();
    }
  }

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(
            BootLine.withIdem(BootLine.plus(BootLine.jdbc(), AopAutoConfiguration.class))))
        .withUserConfiguration(ExportsConfig.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4",
            "idem.max-response-size=1KB");
  }

  /** Lease mode (no transaction): the result over the limit is returned once, then refused. */
  @Test
  void answerLargerThanTheCapNeverRunsTheEffectTwice() {
    app().run(ctx -> {
      Exports exports = ctx.getBean(Exports.class);
      assertThat(exports.export("small", 1000)).isEqualTo("1".repeat(1000));
      assertThat(exports.export("small", 1000)).as("1002 bytes of JSON: stored and replayed").isEqualTo("1".repeat(1000));
      assertThat(exports.export("large", 1023)).isEqualTo("2".repeat(1023));
      assertThatThrownBy(() -> exports.export("large", 1023))
          .isInstanceOf(ResponseNotStoredException.class)
          .hasMessageContaining("1025 bytes")
          .satisfies(e -> assertThat(((ResponseNotStoredException) e).originalBodyBytes()).isEqualTo(1025));
      assertThat(exports.runs()).as("each key ran once").isEqualTo(2);
    });
  }

  /** Transactional mode: the record without the result commits with the caller's transaction. */
  @Test
  void answerLargerThanTheCapNeverRunsTheEffectTwiceInsideATransaction() {
    app().run(ctx -> {
      Exports exports = ctx.getBean(Exports.class);
      TransactionTemplate tx = new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class));
      String first = tx.execute(status -> exports.export("large-tx", 5000));
      assertThat(first).isEqualTo("1".repeat(5000));
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'large-tx' AND state = 'COMPLETED'", Integer.class))
          .isEqualTo(1);
      assertThatThrownBy(() -> tx.executeWithoutResult(status -> exports.export("large-tx", 5000))).isInstanceOf(ResponseNotStoredException.class);
      assertThat(exports.runs()).isEqualTo(1);
    });
  }
}
