package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.redis.RedisDurability;
import dev.idem.redis.RedisLeaseStore;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.internal.IdemFailureAnalyzer;
import dev.idem.spring.rabbit.IdemRabbitListeners;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.AbstractApplicationContextRunner;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.sqlite.SQLiteDataSource;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The starter with parts of the class path hidden ({@link FilteredClassLoader}): spring-jdbc and
 * spring-tx (an application with spring-boot-starter-web, a JDBC driver or Jedis, and the starter
 * only), Jedis, a JDBC driver, Spring Security. {@link WithoutSpringTxClassPathTest} starts a real
 * application on a class path that does not have spring-jdbc and spring-tx at all.
 */
class OptionalLibrariesTest {

  /** What an application with only spring-boot-starter-web and a JDBC driver or Jedis lacks. */
  static final FilteredClassLoader WITHOUT_SPRING_JDBC = new FilteredClassLoader("org.springframework.transaction", "org.springframework.jdbc");

  @TempDir Path dir;

  @Configuration(proxyBeanMethods = false)
  static class Payments {
    @Bean
    IdemAutoConfigurationTest.Payments payments() {
      return new IdemAutoConfigurationTest.Payments();
    }
  }

  /** A DataSource of the application's own, from the driver alone (no spring-jdbc, no pool). */
  @Configuration(proxyBeanMethods = false)
  static class DriverDataSource {
    static Path file;

    @Bean
    DataSource dataSource() {
      SQLiteDataSource ds = new SQLiteDataSource();
      ds.setUrl("jdbc:sqlite:" + file + "?journal_mode=WAL&busy_timeout=10000");
      return ds;
    }
  }

  /** The application's Jedis client. */
  @Configuration(proxyBeanMethods = false)
  static class Jedis {
    @Bean(destroyMethod = "close")
    RedisClient redis() {
      return RedisClient.builder().hostAndPort("127.0.0.1", 6379).build();
    }
  }

  private static <R extends AbstractApplicationContextRunner<R, ?, ?>> R idem(R runner) {
    return runner.withConfiguration(AutoConfigurations.of(BootLine.withIdem(AopAutoConfiguration.class)));
  }

  private static void chargesOnceAndReplays(ApplicationContext ctx) {
    IdemAutoConfigurationTest.Payments payments = ctx.getBean(IdemAutoConfigurationTest.Payments.class);
    String key = "k-" + UUID.randomUUID();
    Map<String, Object> first = payments.charge(key, "acct-1", 100);
    assertThat(payments.charge(key, "acct-1", 100)).isEqualTo(first);
    assertThat(payments.charges()).isEqualTo(1);
  }

  @Test
  void rabbitListenersOnlyWithSpringAmqpAndIdemRabbitmq() {
    idem(new ApplicationContextRunner()).run(ctx ->
        assertThat(ctx).hasNotFailed().hasSingleBean(IdemRabbitListeners.class));
    idem(new ApplicationContextRunner())
        .withClassLoader(new FilteredClassLoader("org.springframework.amqp"))
        .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean(IdemRabbitListeners.class));
    idem(new ApplicationContextRunner())
        .withClassLoader(new FilteredClassLoader("dev.idem.rabbitmq"))
        .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean(IdemRabbitListeners.class));
  }

  @Test
  void withoutSpringJdbcAndSpringTxAWebApplicationStartsInLeaseModeOnTheMemoryStore() {
    idem(new WebApplicationContextRunner())
        .withClassLoader(WITHOUT_SPRING_JDBC)
        .withUserConfiguration(Payments.class)
        .withPropertyValues("idem.required-key-routes=POST /notes")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().hasBean("idempotencyFilter").doesNotHaveBean(JdbcIdempotency.class);
          assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class);
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).engine()).isNotInstanceOf(TransactionalIdempotency.class);
          chargesOnceAndReplays(ctx);
        });
  }

  @Test
  void withoutSpringJdbcAndSpringTxTheDriversDataSourceGivesTheJdbcLeaseStore() {
    DriverDataSource.file = dir.resolve("driver-only.db");
    idem(new WebApplicationContextRunner())
        .withClassLoader(WITHOUT_SPRING_JDBC)
        .withUserConfiguration(Payments.class, DriverDataSource.class)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().doesNotHaveBean(JdbcIdempotency.class);
          assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(JdbcLeaseStore.class);
          chargesOnceAndReplays(ctx);
        });
  }

  @Test
  void withoutSpringJdbcAndSpringTxAJedisBeanGivesTheRedisStoreWithTheConfiguredPrefix() {
    requireRedis();
    String prefix = "idem-starter-" + UUID.randomUUID().toString().substring(0, 8) + ":";
    idem(new WebApplicationContextRunner())
        .withClassLoader(WITHOUT_SPRING_JDBC)
        .withUserConfiguration(Payments.class, Jedis.class)
        .withPropertyValues("idem.redis.key-prefix=" + prefix)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(RedisLeaseStore.class);
          assertThat(((RedisLeaseStore) ctx.getBean(LeaseStore.class)).keyPrefix()).isEqualTo(prefix);
          chargesOnceAndReplays(ctx);
          RedisClient redis = ctx.getBean(RedisClient.class);
          List<String> keys = redis.keys(prefix + "*").stream().toList();
          assertThat(keys).hasSize(1).allMatch(k -> k.matches(Pattern.quote(prefix) + "\\{[0-9a-f]{64}\\}"));
          redis.del(keys.toArray(new String[0]));
        });
  }

  @Test
  void aRedisKeyPrefixWithBracesStopsTheStartNamingTheProperty() {
    requireRedis();
    idem(new ApplicationContextRunner())
        .withUserConfiguration(Jedis.class)
        .withPropertyValues("idem.redis.key-prefix={app}:")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
              .hasMessageContaining("idem.redis.key-prefix").hasMessageContaining("'{' or '}'");
        });
  }

  @Test
  void theRedisDurabilityPropertiesReachTheStoreAndBadOnesStopTheStartNamingTheProperty() {
    requireRedis();
    idem(new ApplicationContextRunner())
        .withUserConfiguration(Jedis.class)
        .withPropertyValues("idem.redis.durability.replicas=1", "idem.redis.durability.timeout=250ms")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(((RedisLeaseStore) ctx.getBean(LeaseStore.class)).durability())
              .isEqualTo(RedisDurability.replicas(1, Duration.ofMillis(250)));
        });
    idem(new ApplicationContextRunner())
        .withUserConfiguration(Jedis.class)
        .withPropertyValues("idem.redis.durability.replicas=1", "idem.redis.durability.aof=true")
        .run(ctx -> assertThat(((RedisLeaseStore) ctx.getBean(LeaseStore.class)).durability().aof()).isTrue());
    for (String bad : List.of("idem.redis.durability.replicas=-1", "idem.redis.durability.aof=true")) {
      idem(new ApplicationContextRunner())
          .withUserConfiguration(Jedis.class)
          .withPropertyValues(bad, "idem.redis.durability.timeout=0s")
          .run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
                .hasMessageContaining("idem.redis.durability");
          });
    }
  }

  @Test
  void transactionalModeWithoutSpringJdbcRefusesToStartNamingSpringBootStarterJdbc() {
    DriverDataSource.file = dir.resolve("refused.db");
    for (AbstractApplicationContextRunner<?, ?, ?> runner : List.of(
        idem(new WebApplicationContextRunner()).withUserConfiguration(DriverDataSource.class),
        idem(new WebApplicationContextRunner()),
        idem(new ApplicationContextRunner()).withUserConfiguration(DriverDataSource.class))) {
      runner.withClassLoader(WITHOUT_SPRING_JDBC)
          .withPropertyValues("idem.mode=transactional", "idem.required-key-routes=POST /notes")
          .run(ctx -> {
            assertThat(ctx).hasFailed();
            IdemConfigurationException e = (IdemConfigurationException) IdemAutoConfigurationTest.causeOf(
                ctx.getStartupFailure(), IdemConfigurationException.class);
            assertThat(e.property()).isEqualTo("idem.mode");
            assertThat(e).hasMessageContaining("spring-boot-starter-jdbc").hasMessageContaining("spring-tx");
            assertThat(new IdemFailureAnalyzer().analyze(ctx.getStartupFailure()).getDescription()).contains("spring-boot-starter-jdbc");
          });
    }
  }

  @Test
  void withoutJedisTheStoreIsTheDataSourceAndIdemStoreRedisIsRefused() {
    DriverDataSource.file = dir.resolve("no-jedis.db");
    idem(new ApplicationContextRunner())
        .withClassLoader(new FilteredClassLoader("redis.clients"))
        .withUserConfiguration(DriverDataSource.class, Payments.class)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(JdbcLeaseStore.class);
          chargesOnceAndReplays(ctx);
        });
    idem(new ApplicationContextRunner())
        .withClassLoader(new FilteredClassLoader("redis.clients"))
        .withPropertyValues("idem.store=redis")
        .run(ctx -> assertThat(IdemAutoConfigurationTest.causeOf(ctx.getStartupFailure(), IdemConfigurationException.class))
            .hasMessageContaining("idem.store").hasMessageContaining("UnifiedJedis"));
  }

  @Test
  void withoutJdbcDriverJedisSpringJdbcOrSpringTxTheStoreIsInMemory() {
    idem(new WebApplicationContextRunner())
        .withClassLoader(new FilteredClassLoader("org.springframework.transaction", "org.springframework.jdbc", "redis.clients", "org.sqlite",
            "org.postgresql", "org.mariadb"))
        .withUserConfiguration(Payments.class)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class);
          chargesOnceAndReplays(ctx);
        });
  }

  /** Under CI=true a missing Redis is a failure; elsewhere the test is skipped with a message. */
  static void requireRedis() {
    try (RedisClient redis = RedisClient.builder().hostAndPort("127.0.0.1", 6379).build()) {
      redis.ping();
    } catch (JedisException e) {
      String message = "Redis is not reachable at 127.0.0.1:6379 (" + e.getMessage() + ")";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      System.err.println("[idem-spring-boot-starter] SKIPPED: " + message);
      Assumptions.abort(message);
    }
  }
}
