package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.ResponseProtection;
import dev.idem.jdbc.JdbcIdempotency;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

/** {@code idem.protection.*}: off when absent, validated at start-up, applied to every store. */
class IdemProtectionPropertiesTest {

  private static final String KEY_A = Base64.getEncoder().encodeToString(new byte[32]);
  private static final String SHORT_KEY = Base64.getEncoder().encodeToString("sixteen byte key".getBytes(StandardCharsets.US_ASCII));

  @TempDir Path dir;

  private ApplicationContextRunner withDatabase() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(
            BootLine.withIdem(BootLine.plus(BootLine.jdbc(), AopAutoConfiguration.class))))
        .withUserConfiguration(IdemAutoConfigurationTest.PaymentsConfig.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4");
  }

  @Test
  void protectionIsOffWithoutProperties() {
    withDatabase().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(JdbcIdempotency.class).responseProtection().enabled()).isFalse();
    });
  }

  @Test
  void withAKeyringStoredResultsAreEncryptedAndStillReplay() {
    withDatabase().withPropertyValues("idem.protection.keys.a=" + KEY_A, "idem.protection.current-key=a").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(JdbcIdempotency.class).responseProtection().currentKeyId()).isEqualTo("a");
      IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
      Object first = payments.charge("k-1", "account-secret-7", 100);
      assertThat(payments.charge("k-1", "account-secret-7", 100)).isEqualTo(first);
      assertThat(payments.charges()).isEqualTo(1);

      List<byte[]> stored = ctx.getBean(JdbcTemplate.class).queryForList("SELECT response FROM idem_keys", byte[].class);
      assertThat(stored).hasSize(1);
      assertThat(ResponseProtection.isProtected(stored.get(0))).isTrue();
      assertThat(new String(stored.get(0), StandardCharsets.ISO_8859_1)).doesNotContain("account-secret-7");
    });
  }

  @Test
  void aCurrentKeyThatIsNotInTheKeyringStopsTheStart() {
    withDatabase().withPropertyValues("idem.protection.keys.a=" + KEY_A, "idem.protection.current-key=b").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.protection.current-key")
          .hasMessageContaining("'b'");
    });
  }

  @Test
  void keysWithoutACurrentKeyStopTheStart() {
    withDatabase().withPropertyValues("idem.protection.keys.a=" + KEY_A).run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.protection.current-key");
    });
  }

  @Test
  void aKeyOfTheWrongLengthStopsTheStartWithoutShowingTheKey() {
    withDatabase().withPropertyValues("idem.protection.keys.a=" + SHORT_KEY, "idem.protection.current-key=a").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.protection.keys.a")
          .hasMessageContaining("32 bytes")
          .hasMessageNotContaining(SHORT_KEY);
    });
  }
}
