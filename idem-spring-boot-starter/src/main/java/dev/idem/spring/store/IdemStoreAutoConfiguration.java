package dev.idem.spring.store;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.redis.RedisDurability;
import dev.idem.redis.RedisLeaseStore;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemStoreDecorator;
import dev.idem.spring.internal.RedisStores;
import dev.idem.spring.internal.StoreChoice;
import dev.idem.spring.observation.IdemMetricsAutoConfiguration;
import dev.idem.spring.transaction.IdemTransactionalAutoConfiguration;
import java.time.Clock;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * The lease store, chosen by {@code idem.store}: with {@code auto}, Redis when idem-redis is on the
 * class path and the application has a Jedis {@code UnifiedJedis} bean or Spring Data Redis's
 * {@code RedisConnectionFactory}, else the application's {@link DataSource} ({@link
 * JdbcLeaseStore}), else memory, with a warning. Every {@link IdemStoreDecorator} bean wraps it
 * (Micrometer's timer, {@link IdemMetricsAutoConfiguration}). The application's own {@link LeaseStore}
 * bean replaces it.
 *
 * <p>The Redis clients are found when the store is built, not when the configuration is read, so a
 * client from an auto-configuration ordered after Idem's is found too. Redis's types are touched
 * only in {@link RedisConfiguration} and its nested configurations, each guarded by {@link
 * ConditionalOnClass}.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemTransactionalAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
public class IdemStoreAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  /**
   * The store, chosen by {@code idem.store}. With {@code r2dbc} the WebFlux filter keeps its keys in
   * the R2DBC key table ({@code IdemReactiveWebAutoConfiguration}); this bean, for blocking callers
   * ({@code @Idempotent} methods, message listeners), is then the in-memory store, since R2DBC has
   * no blocking store. Without that R2DBC store (not a WebFlux application, no idem-r2dbc, no
   * ConnectionFactory), {@code r2dbc} stops the start-up with what is missing.
   */
  @Bean
  @ConditionalOnMissingBean
  LeaseStore idemLeaseStore(
      IdemProperties properties,
      ObjectProvider<DataSource> dataSource,
      ObjectProvider<IdemStoreDecorator> decorators,
      ObjectProvider<RedisStores> redis,
      ObjectProvider<AsyncLeaseStore> asyncStores) {
    LeaseStore store;
    if (properties.getStore() == IdemProperties.StoreType.R2DBC && isR2dbc(asyncStores.getIfUnique())) {
      LOG.info("Idem: idem.store=r2dbc keeps the WebFlux filter's keys in the R2DBC key table; blocking callers"
          + " (@Idempotent methods, message listeners) have no R2DBC store and keep theirs in this instance's memory");
      store = new InMemoryLeaseStore(Clock.systemUTC(), properties.getProtection().build());
    } else {
      store = chooseStore(properties, dataSource.getIfAvailable(), redis.getIfAvailable());
    }
    for (IdemStoreDecorator decorator : decorators.orderedStream().toList()) {
      store = decorator.decorate(store);
    }
    return store;
  }

  /** @return whether {@code store} is idem-r2dbc's store (by name: idem-r2dbc is optional) */
  private static boolean isR2dbc(AsyncLeaseStore store) {
    return store != null && store.getClass().getName().equals("dev.idem.r2dbc.R2dbcLeaseStore");
  }

  private static LeaseStore chooseStore(IdemProperties p, DataSource dataSource, RedisStores redis) {
    return StoreChoice.chooseStore(p, p.getStore(), "idem.store", dataSource, redis);
  }

  /** The Redis store, only with idem-redis on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.idem.redis.RedisLeaseStore")
  static class RedisConfiguration {

    @Bean
    RedisStores idemRedisStores(ObjectProvider<JedisClient> jedis, ObjectProvider<SpringDataRedisClient> springData) {
      return new ClientStores(jedis.getIfAvailable(), springData.getIfAvailable());
    }

    /**
     * The application's own Jedis {@code UnifiedJedis} bean if it has one (it wins), else Spring
     * Data Redis's {@code RedisConnectionFactory} (from spring-boot-starter-data-redis, configured
     * by {@code spring.data.redis.*}, Lettuce or Jedis).
     */
    private static final class ClientStores implements RedisStores {
      private final JedisClient jedis;
      private final SpringDataRedisClient springData;

      ClientStores(JedisClient jedis, SpringDataRedisClient springData) {
        this.jedis = jedis;
        this.springData = springData;
      }

      @Override
      public boolean hasClient() {
        return (jedis != null && jedis.client() != null) || (springData != null && springData.factory() != null);
      }

      @Override
      public LeaseStore create(IdemProperties p) {
        RedisDurability durability = configured("idem.redis.durability", () -> durability(p.getRedis().getDurability()));
        return configured("idem.redis.key-prefix", () -> {
          UnifiedJedis client = jedis == null ? null : jedis.client();
          RedisLeaseStore.Builder builder = client != null ? RedisLeaseStore.builder(client) : springData.builder(durability);
          builder.responseProtection(p.getProtection().build());
          if (p.getRedis().getKeyPrefix() != null) {
            builder.keyPrefix(p.getRedis().getKeyPrefix());
          }
          return builder.durability(durability).build();
        });
      }

      @Override
      public String missing() {
        if (springData == null) {
          return "is redis, but the application has no Redis connection: add the dependency"
              + " org.springframework.boot:spring-boot-starter-data-redis" + StoreChoice.REDIS_SETTINGS;
        }
        return "is redis, but the application has no single RedisConnectionFactory bean (is Spring Boot's Redis"
            + " auto-configuration of spring-boot-starter-data-redis excluded, or are there several factories?): keep one,"
            + " mark one @Primary, or declare a Jedis UnifiedJedis bean";
      }

      /** idem.redis.durability.*: replicas 0 is none; otherwise replicas(n, timeout), with aof WAITAOF. */
      private static RedisDurability durability(IdemProperties.Durability d) {
        if (d.getReplicas() == 0) {
          if (d.isAof()) {
            throw new IllegalArgumentException("aof=true needs replicas 1 or more");
          }
          return RedisDurability.none();
        }
        return d.isAof()
            ? RedisDurability.replicasAndAof(d.getReplicas(), d.getTimeout())
            : RedisDurability.replicas(d.getReplicas(), d.getTimeout());
      }
    }

    /** The application's Jedis client, with Jedis on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "redis.clients.jedis.UnifiedJedis")
    static class JedisConfiguration {
      @Bean
      JedisClient idemJedisClient(ObjectProvider<UnifiedJedis> jedis) {
        return new JedisClient(jedis);
      }
    }

    /** Spring Data Redis's connection factory, with Spring Data Redis on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.data.redis.connection.RedisConnectionFactory")
    static class SpringDataRedisConfiguration {
      @Bean
      SpringDataRedisClient idemSpringDataRedisClient(ObjectProvider<RedisConnectionFactory> factory) {
        return new SpringDataRedisClient(factory);
      }
    }
  }

  /** The application's unique Jedis {@code UnifiedJedis} bean, looked up when the store is built. */
  static final class JedisClient {
    private final ObjectProvider<UnifiedJedis> jedis;

    JedisClient(ObjectProvider<UnifiedJedis> jedis) {
      this.jedis = jedis;
    }

    /** @return the application's unique client, or {@code null} */
    UnifiedJedis client() {
      return jedis.getIfUnique();
    }
  }

  /** The application's unique {@code RedisConnectionFactory} bean, looked up when the store is built. */
  static final class SpringDataRedisClient {
    private final ObjectProvider<RedisConnectionFactory> factory;

    SpringDataRedisClient(ObjectProvider<RedisConnectionFactory> factory) {
      this.factory = factory;
    }

    /** @return the application's unique factory, or {@code null} */
    RedisConnectionFactory factory() {
      return factory.getIfUnique();
    }

    /** @return the store's builder on the factory; refuses durability on a cluster (it needs Jedis) */
    RedisLeaseStore.Builder builder(RedisDurability durability) {
      RedisConnectionFactory f = factory();
      if (!durability.isNone() && SpringDataRedisStoreClient.clusterAware(f)) {
        throw new IdemConfigurationException("idem.redis.durability", SpringDataRedisStoreClient.CLUSTER_DURABILITY, null);
      }
      return RedisLeaseStore.builderFor(new SpringDataRedisStoreClient(f));
    }
  }
}
