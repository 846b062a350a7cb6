package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatus;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.jdbc.steps.JdbcStepOperations;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.internal.IdemFailureAnalyzer;
import dev.idem.spring.internal.ModeDecision;
import dev.idem.spring.internal.TimedLeaseStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.sqlite.SQLiteDataSource;

public class IdemAutoConfigurationTest {

  @TempDir Path dir;

  /** A service with an idempotent method that counts its real invocations. */
  public static class Payments {
    final AtomicInteger charges = new AtomicInteger();

    @Idempotent(operation = "charge")
    public Map<String, Object> charge(@Idempotent.Key String key, String account, long cents) {
      int n = charges.incrementAndGet();
      return Map.of("charge", n, "account", account, "cents", cents);
    }

    public int charges() {
      return charges.get();
    }
  }

  @Configuration(proxyBeanMethods = false)
  public static class PaymentsConfig {
    @Bean
    Payments payments() {
      return new Payments();
    }

    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  private ApplicationContextRunner withDatabase() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(
            BootLine.withIdem(BootLine.plus(BootLine.jdbc(), AopAutoConfiguration.class))))
        .withUserConfiguration(PaymentsConfig.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000",
            "spring.datasource.hikari.maximum-pool-size=4");
  }

  @Test
  void aDataSourceGivesAJdbcStoreAndATransactionalEngine() {
    withDatabase().run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(TimedLeaseStore.class);
      assertThat(ctx).hasSingleBean(JdbcIdempotency.class).hasSingleBean(LeaseIdempotency.class);
    });
  }

  @Test
  void aDataSourceGivesStepOperationsOnTheStoresKeyTable() {
    withDatabase().withPropertyValues("idem.table=app_keys").run(ctx -> {
      assertThat(ctx).hasNotFailed().hasSingleBean(JdbcStepOperations.class);
      JdbcStepOperations steps = ctx.getBean(JdbcStepOperations.class);
      // the steps run under a claim of the starter's lease engine: they find it in their key table
      IdempotentRequest request = IdempotentRequest.ofJson("alice", "POST /rides", "k-1", "{}".getBytes(StandardCharsets.UTF_8));
      Outcome outcome = ctx.getBean(LeaseIdempotency.class).execute(request, c -> steps.runClaimed(c.lease(), new byte[0],
          (s, in) -> StoredResponse.of(201, s.local("ride", conn -> "ride-1"))));
      assertThat(outcome.response().bodyAsString()).isEqualTo("ride-1");
    });
  }

  @Test
  void withoutADataSourceTheStoreIsInMemory() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .run(ctx -> {
          assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class);
          assertThat(ctx).doesNotHaveBean(JdbcIdempotency.class).doesNotHaveBean(JdbcStepOperations.class);
        });
  }

  @Test
  void startsWithoutMicrometerOnTheClassPath() {
    new ApplicationContextRunner()
        .withClassLoader(new FilteredClassLoader("io.micrometer"))
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class);
        });
  }

  @Test
  void aRetentionShorterThanTheLeaseStopsTheStartWithAClearMessage() {
    withDatabase().withPropertyValues("idem.lease=10m", "idem.retention=1m").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.retention")
          .hasMessageContaining("must be longer than the lease");
      assertThat(new IdemFailureAnalyzer().analyze(ctx.getStartupFailure()).getAction()).contains("idem.retention");
    });
  }

  /**
   * Regression: transactional mode refused {@code idem.retention=2s} unless {@code idem.lease} was
   * lowered too, although the filter takes no lease there.
   */
  @Test
  void transactionalModeAcceptsARetentionShorterThanTheDefaultLease() {
    withDatabase().withPropertyValues("idem.mode=transactional", "idem.retention=2s").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(JdbcIdempotency.class).retention()).isEqualTo(Duration.ofSeconds(2));
      assertThat(ctx).hasSingleBean(LeaseIdempotency.class);
    });
    withDatabase().withPropertyValues("idem.mode=transactional", "idem.retention=2s", "idem.lease=10s").run(ctx ->
        assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
            .as("an explicit lease is still checked against the retention")
            .hasMessageContaining("must be longer than the lease"));
  }

  /** Regression: an invalid {@code idem.retention} was reported as an error of {@code idem.table}. */
  @Test
  void anInvalidRetentionIsReportedAsIdemRetentionNotIdemTable() {
    // 500 ms: valid for the lease engine (with a 10 ms lease), not for the key table (1 second at least)
    withDatabase().withPropertyValues("idem.lease=10ms", "idem.retention=500ms").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.retention")
          .hasMessageNotContaining("idem.table");
    });
  }

  public static Throwable causeOf(Throwable t, Class<? extends Throwable> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return c;
      }
    }
    throw new AssertionError("no " + type.getSimpleName() + " in the causes of " + t);
  }

  @Test
  void aMalformedRouteStopsTheStartWithAClearMessage() {
    withDatabase().withPropertyValues("idem.required-key-routes=/notes").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.required-key-routes")
          .hasMessageContaining("\"METHOD /path-pattern\"");
    });
  }

  @Test
  void aStoreThatIsNotThereStopsTheStart() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.store=jdbc")
        .run(ctx -> assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class)).hasMessageContaining("no DataSource"));
  }

  @Test
  void anIdempotentMethodRunsOnceAndRejectsOtherArgumentsUnderTheSameKey() {
    withDatabase().run(ctx -> {
      Payments payments = ctx.getBean(Payments.class);
      Map<String, Object> first = payments.charge("pay-1", "acct-9", 500);
      Map<String, Object> second = payments.charge("pay-1", "acct-9", 500);
      assertThat(second).isEqualTo(first);
      assertThat(payments.charges()).isEqualTo(1);
      assertThatThrownBy(() -> payments.charge("pay-1", "acct-9", 600)).isInstanceOf(IdempotencyKeyReusedException.class);
      assertThat(payments.charge("pay-2", "acct-9", 500).get("charge")).isEqualTo(2);

      MeterRegistry meters = ctx.getBean(MeterRegistry.class);
      assertThat(meters.get("idem.executions").counter().count()).isEqualTo(2);
      assertThat(meters.get("idem.replays").counter().count()).isEqualTo(1);
      assertThat(meters.get("idem.rejections").tag("reason", "key-reused").counter().count()).isEqualTo(1);
      assertThat(meters.get("idem.store.latency").tag("operation", "claim").timer().count()).isEqualTo(4);
    });
  }

  @Test
  void insideACallersTransactionTheClaimJoinsItAndRollsBackWithIt() {
    withDatabase().run(ctx -> {
      Payments payments = ctx.getBean(Payments.class);
      TransactionTemplate tx = new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class));
      JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
      tx.executeWithoutResult(status -> {
        payments.charge("pay-tx", "acct-1", 100);
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'pay-tx'", Integer.class))
            .as("the claim is written in the caller's transaction").isEqualTo(1);
        status.setRollbackOnly();
      });
      assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'pay-tx'", Integer.class))
          .as("and rolled back with it").isZero();
      tx.executeWithoutResult(status -> payments.charge("pay-tx", "acct-1", 100));
      assertThat(payments.charges()).as("the retry after the rollback runs again").isEqualTo(2);
      tx.executeWithoutResult(status -> payments.charge("pay-tx", "acct-1", 100));
      assertThat(payments.charges()).as("and a committed one replays").isEqualTo(2);
    });
  }

  @Test
  void theFilterIsRegisteredOnServletApplications() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.required-key-routes=POST /notes")
        .run(ctx -> {
          assertThat(ctx).hasBean("idempotencyFilter");
          assertThat(ctx.getBean("idempotencyFilter")).isInstanceOf(FilterRegistrationBean.class);
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).routeFor("POST", "/notes").requirement())
              .isEqualTo(KeyRequirement.REQUIRED);
        });
  }

  @Test
  void configurationMetadataIsPublished() throws Exception {
    try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      String metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(metadata).contains("\"idem.retention\"", "\"idem.lease\"", "\"idem.required-key-routes\"", "\"idem.max-body-size\"",
          "\"idem.max-response-size\"", "\"idem.problem-type-base\"");
      assertThat(metadata).contains("The largest response body the filter holds in memory to store it",
          "The base URI of the \\\"type\\\" member");
    }
  }

  @Test
  void retentionMetadataPublishesTheRetentionEachStoreEnforces() throws Exception {
    try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      String metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(metadata).contains("at most 1 minute longer in transactional mode",
          "at most the lease longer in lease mode", "draft-ietf-httpapi-idempotency-key-header, section 2.3");
    }
  }

  private ApplicationContextRunner filterOnly() {
    return new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(BootLine.withIdem()));
  }

  @Test
  void theFilterDefaultsKeepTheResponseLimitAndProblemTypesOfTheServletModule() {
    filterOnly().run(ctx -> {
      IdempotencyFilterConfig config = ctx.getBean(IdempotencyFilterConfig.class);
      assertThat(config.maxResponseBytes()).isEqualTo(IdempotencyFilterConfig.DEFAULT_MAX_RESPONSE_BYTES);
      assertThat(config.problemTypeBase()).hasValue(IdempotencyFilterConfig.DEFAULT_PROBLEM_TYPE_BASE);
    });
  }

  @Test
  void responseLimitAndProblemTypeBaseAreBoundFromProperties() {
    filterOnly().withPropertyValues("idem.max-response-size=256KB", "idem.problem-type-base=https://api.example.com/problems/")
        .run(ctx -> {
          IdempotencyFilterConfig config = ctx.getBean(IdempotencyFilterConfig.class);
          assertThat(config.maxResponseBytes()).isEqualTo(256 * 1024);
          assertThat(config.problemTypeBase()).hasValue(URI.create("https://api.example.com/problems/"));
        });
    filterOnly().withPropertyValues("idem.max-response-size=0B", "idem.problem-type-base=about:blank")
        .run(ctx -> {
          IdempotencyFilterConfig config = ctx.getBean(IdempotencyFilterConfig.class);
          assertThat(config.maxResponseBytes()).isZero();
          assertThat(config.problemTypeBase()).isEmpty();
        });
  }

  @Test
  void aResponseLimitOver64MBStopsTheStartWithAClearMessage() {
    filterOnly().withPropertyValues("idem.max-response-size=65MB").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.max-response-size")
          .hasMessageContaining("64MB");
      assertThat(new IdemFailureAnalyzer().analyze(ctx.getStartupFailure()).getAction()).contains("idem.max-response-size");
    });
    filterOnly().withPropertyValues("idem.max-response-size=-1B").run(ctx ->
        assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class)).hasMessageContaining("idem.max-response-size"));
  }

  @Test
  void aProblemTypeBaseWithoutTrailingSlashStopsTheStartWithAClearMessage() {
    filterOnly().withPropertyValues("idem.problem-type-base=https://api.example.com/problems").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
          .hasMessageContaining("idem.problem-type-base")
          .hasMessageContaining("must end in '/'");
    });
    filterOnly().withPropertyValues("idem.problem-type-base=problems/").run(ctx ->
        assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
            .hasMessageContaining("idem.problem-type-base").hasMessageContaining("absolute"));
  }

  @Test
  void transactionalModeWithoutADataSourceStopsTheStartNamingTheProperty() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.required-key-routes=POST /notes", "idem.mode=transactional")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
              .hasMessageContaining("idem.mode")
              .hasMessageContaining("no DataSource");
        });
  }

  @Test
  void transactionalModeWithADataSourceRunsTheFilterOnTheTransactionalEngine() {
    withDatabase()
        .withPropertyValues("idem.required-key-routes=POST /notes", "idem.mode=transactional")
        .run(ctx -> assertThat(ctx.getBean(IdempotencyFilterConfig.class).engine())
            .isInstanceOf(TransactionalIdempotency.class));
  }
  /**
   * A DataSource and its transaction manager from an auto-configuration that runs after Idem's: after
   * the core, and last of all (lowest precedence), so after each of Idem's concerns too.
   */
  @org.springframework.boot.autoconfigure.AutoConfiguration(after = IdemAutoConfiguration.class)
  @org.springframework.boot.autoconfigure.AutoConfigureOrder(org.springframework.core.Ordered.LOWEST_PRECEDENCE)
  static class LateDataSourceAutoConfiguration {
    @Bean
    DataSource lateDataSource() throws IOException {
      Path file = Files.createTempFile("idem-late", ".db");
      file.toFile().deleteOnExit();
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite:" + file);
      return ds;
    }

    @Bean
    PlatformTransactionManager lateTransactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class DataSourceOnlyConfig {
    @Bean
    DataSource dataSource() {
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite::memory:");
      return ds;
    }
  }

  /**
   * Was: "transactional needs one DataSource and one PlatformTransactionManager bean ... found a
   * DataSource and a transaction manager" (both were there; the JdbcIdempotency bean was not).
   */
  @Test
  void transactionalModeWithoutTheJdbcEngineSaysWhyItWasNotCreatedInsteadOfContradictingItself() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(LateDataSourceAutoConfiguration.class)))
        .withPropertyValues("idem.required-key-routes=POST /notes", "idem.mode=transactional", "idem.principal=servlet")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class).getMessage())
              .contains("idem.mode")
              .contains("the JdbcIdempotency bean could not be created because no DataSource bean was defined yet")
              .doesNotContain("there is no DataSource bean")
              .doesNotContain("no PlatformTransactionManager")
              .doesNotContain("found a");
        });
  }

  @Test
  void transactionalModeWithADataSourceButNoTransactionManagerNamesOnlyTheTransactionManager() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withUserConfiguration(DataSourceOnlyConfig.class)
        .withPropertyValues("idem.required-key-routes=POST /notes", "idem.mode=transactional", "idem.principal=servlet")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class).getMessage())
              .contains("there is no PlatformTransactionManager bean")
              .doesNotContain("DataSource bean")
              .doesNotContain("JdbcIdempotency");
        });
  }
  /**
   * Was: with the DataSource from an auto-configuration ordered after Idem's (so no JdbcIdempotency
   * bean), an @Idempotent method inside that DataSource's transaction silently ran in lease mode,
   * storing its result beside a transaction that could still roll back.
   */
  @Test
  void anIdempotentMethodInsideATransactionWithoutTheJdbcEngineRefusesInsteadOfFallingBackToLeaseMode() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(AopAutoConfiguration.class, LateDataSourceAutoConfiguration.class)))
        .withUserConfiguration(PaymentsConfig.class)
        // lease: with the default, auto, the start-up itself refuses (see the next test)
        .withPropertyValues("idem.principal=shared", "idem.mode=lease")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().doesNotHaveBean(JdbcIdempotency.class);
          Payments payments = ctx.getBean(Payments.class);
          TransactionTemplate tx = new TransactionTemplate(ctx.getBean(PlatformTransactionManager.class));
          assertThatThrownBy(() -> tx.executeWithoutResult(s -> payments.charge("late-1", "acct-1", 100)))
              .isInstanceOf(IllegalStateException.class)
              .hasMessageContaining("no JdbcIdempotency bean to join it");
          assertThat(payments.charges()).isZero();
          // outside a transaction, lease mode is what the method asks for
          assertThat(payments.charge("late-2", "acct-1", 100)).containsEntry("charge", 1);
        });
  }

  @Test
  void theDefaultModeWithALateDataSourceRefusesToStartInsteadOfFallingBackToLeaseMode() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(LateDataSourceAutoConfiguration.class)))
        .withPropertyValues("idem.principal=servlet")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class).getMessage())
              .startsWith("idem.mode: is auto")
              .contains("the JdbcIdempotency bean could not be created")
              .contains("idem.mode=lease");
        });
  }

  /**
   * Was: with no idem.mode the filter ran lease mode beside the application's DataSource and
   * transaction manager, so a handler whose write committed before it failed ran again on the
   * retry: two rows for one key.
   */
  @Test
  void theDefaultModeWithADataSourceAndItsTransactionManagerIsTransactionalNotLease() {
    withDatabase().withPropertyValues("idem.principal=servlet").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(IdempotencyFilterConfig.class).engine()).isInstanceOf(TransactionalIdempotency.class);
      assertThat(ctx.getBean(ModeDecision.class).mode).isEqualTo(IdemProperties.Mode.TRANSACTIONAL);
      assertThat(ctx.getBean(ModeDecision.class).reason).startsWith("auto: DataSource 'dataSource' with");
    });
  }

  @Test
  void theDefaultModeWithoutADataSourceIsLease() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.principal=servlet")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).engine()).isInstanceOf(LeaseIdempotency.class);
          assertThat(ctx.getBean(ModeDecision.class).reason).isEqualTo("auto: the application has no DataSource");
        });
  }

  @Test
  void theDefaultModeWithADataSourceButNoTransactionManagerIsLease() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withUserConfiguration(DataSourceOnlyConfig.class)
        .withPropertyValues("idem.principal=servlet")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).engine()).isInstanceOf(LeaseIdempotency.class);
          assertThat(ctx.getBean(ModeDecision.class).reason).contains("no PlatformTransactionManager");
        });
  }

  @Test
  void theDefaultModeWithKeysInMemoryOrRedisIsLeaseEvenBesideADataSource() {
    withDatabase().withPropertyValues("idem.principal=servlet", "idem.store=memory").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(IdempotencyFilterConfig.class).engine()).isInstanceOf(LeaseIdempotency.class);
      assertThat(ctx.getBean(ModeDecision.class).reason).isEqualTo("auto: idem.store=memory keeps the keys outside the database");
    });
  }

  @Test
  void anExplicitLeaseModeBesideADataSourceIsLease() {
    withDatabase().withPropertyValues("idem.principal=servlet", "idem.mode=lease").run(ctx ->
        assertThat(ctx.getBean(IdempotencyFilterConfig.class).engine()).isInstanceOf(LeaseIdempotency.class));
  }

  /** Two DataSources, the key table's @Primary, and a transaction manager of the other one. */
  @Configuration(proxyBeanMethods = false)
  static class TransactionManagerOfAnotherDataSourceConfig {
    @Bean
    @org.springframework.context.annotation.Primary
    DataSource keysDataSource() {
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite::memory:");
      return ds;
    }

    @Bean
    DataSource ordersDataSource() {
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite::memory:");
      return ds;
    }

    @Bean
    PlatformTransactionManager ordersTransactionManager(@org.springframework.beans.factory.annotation.Qualifier("ordersDataSource") DataSource orders) {
      return new DataSourceTransactionManager(orders);
    }
  }

  @Test
  void aTransactionManagerOfAnotherDataSourceThanTheKeyTablesRefusesTransactionalModeAndSaysWhy() {
    for (String mode : new String[] {"auto", "transactional"}) {
      new WebApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
          .withUserConfiguration(TransactionManagerOfAnotherDataSourceConfig.class)
          .withPropertyValues("idem.principal=servlet", "idem.mode=" + mode)
          .run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class).getMessage())
                .startsWith("idem.mode:")
                .contains("the transaction manager 'ordersTransactionManager' (DataSourceTransactionManager) manages DataSource"
                    + " 'ordersDataSource' while the key table is in DataSource 'keysDataSource'")
                .contains("idem.mode=lease");
          });
    }
  }

  /** Two DataSources and none is @Primary. */
  @Configuration(proxyBeanMethods = false)
  static class TwoDataSourcesConfig {
    @Bean
    DataSource one() {
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite::memory:");
      return ds;
    }

    @Bean
    DataSource two() {
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite::memory:");
      return ds;
    }

    @Bean
    PlatformTransactionManager transactionManager(@org.springframework.beans.factory.annotation.Qualifier("one") DataSource one) {
      return new DataSourceTransactionManager(one);
    }
  }

  @Test
  void twoDataSourcesWithoutAPrimaryRefuseTheDefaultModeNamingBoth() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withUserConfiguration(TwoDataSourcesConfig.class)
        .withPropertyValues("idem.principal=servlet")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(causeOf(ctx.getStartupFailure(), IdemConfigurationException.class).getMessage())
              .startsWith("idem.mode: is auto")
              .contains("there are 2 DataSource beans [one, two] and none is @Primary")
              .contains("idem.mode=lease");
        });
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnErrorFormatConfig {
    @Bean
    dev.idem.servlet.ProblemRenderer ownErrorFormat() {
      return (problem, response) -> {
        response.setStatus(problem.status());
        response.setContentType("application/json");
        response.getWriter().write("{\"code\":\"" + problem.name() + "\"}");
      };
    }
  }

  @Test
  void anApplicationsProblemRendererBeanWritesIdemsRefusalsForTheFilterAndIdempotentMethods() {
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withUserConfiguration(OwnErrorFormatConfig.class)
        .withPropertyValues("idem.principal=servlet")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).problemRenderer()).isSameAs(ctx.getBean("ownErrorFormat"));
        });
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
        .withPropertyValues("idem.principal=servlet")
        .run(ctx -> assertThat(ctx.getBean(IdempotencyFilterConfig.class).problemRenderer()).isNotNull());
  }
}
