package dev.idem.spring.store;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.redis.AsyncRedisLeaseStore;
import dev.idem.redis.LettuceStoreClient;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.codec.ByteArrayCodec;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.data.redis.connection.ReactiveRedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A reactive web application (Spring WebFlux) with idem-redis, Lettuce and Spring Data Redis's
 * {@link ReactiveRedisConnectionFactory} (spring-boot-starter-data-redis-reactive, configured by
 * {@code spring.data.redis.*}), and {@code idem.store=redis} (or {@code auto}, which chooses Redis
 * when there is a Redis connection): the non-blocking Redis store, {@link AsyncRedisLeaseStore},
 * on a Lettuce connection of its own from the factory's client ({@link
 * LettuceConnectionFactory#getNativeClient()}, standalone, Sentinel or Cluster), with {@code
 * idem.redis.key-prefix} and {@code idem.protection.*}. Its records are the blocking Redis store's:
 * the same keys, readable by either. The application's own {@link AsyncLeaseStore} bean replaces
 * it.
 *
 * <p>The connection is opened when the store's bean is created (the application's start-up, not a
 * request) and closed with the context. {@code idem.redis.durability.*} other than {@code
 * replicas=0} is refused here: {@code WAIT} on the store's one multiplexed connection would hold
 * every command queued behind it, so durable writes need a pool of connections of their own
 * ({@code LettuceStoreClient.of(connection, pool)}), which an application declares in its own
 * {@code AsyncLeaseStore} bean.
 */
@AutoConfiguration(after = IdemStoreAutoConfiguration.class, afterName = {
    "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
    "org.springframework.boot.autoconfigure.data.redis.RedisReactiveAutoConfiguration",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration"})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass(name = {"dev.idem.redis.AsyncRedisLeaseStore", "io.lettuce.core.RedisClient",
    "org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory"})
public class IdemAsyncRedisStoreAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  /** What durable writes on WebFlux need, part of the refusal of {@code idem.redis.durability.*}. */
  static final String DURABILITY_UNSUPPORTED = "waits for replicas (WAIT), which on WebFlux would hold every command queued"
      + " behind it on the store's one shared Lettuce connection; set idem.redis.durability.replicas=0, or declare an"
      + " AsyncLeaseStore bean: AsyncRedisLeaseStore.builder(LettuceStoreClient.of(connection, pool)).durability(...), with a"
      + " Lettuce pool of connections of their own for the writes that wait";

  /**
   * The Lettuce connection of the store, from the factory's client, closed with the context
   * (before the factory, which it depends on, shuts its client down).
   *
   * @throws IdemConfigurationException if the factory is not Lettuce's, or a durability is set
   */
  @Bean
  @ConditionalOnMissingBean(AsyncLeaseStore.class)
  @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
  @Conditional(StoreIsRedis.class)
  IdemLettuceConnection idemLettuceConnection(IdemProperties p, ObjectProvider<ReactiveRedisConnectionFactory> factories) {
    if (p.getRedis().getDurability().getReplicas() != 0 || p.getRedis().getDurability().isAof()) {
      throw new IdemConfigurationException("idem.redis.durability", DURABILITY_UNSUPPORTED, null);
    }
    ReactiveRedisConnectionFactory factory = factories.getIfUnique();
    if (!(factory instanceof LettuceConnectionFactory lettuce)) {
      throw new IdemConfigurationException("idem.store", "is redis on WebFlux, which Idem runs on Lettuce without blocking,"
          + " and the application's ReactiveRedisConnectionFactory is " + (factory == null ? "not unique (mark one @Primary)"
          : factory.getClass().getName() + ", not Spring Data Redis's LettuceConnectionFactory"), null);
    }
    AbstractRedisClient client = lettuce.getRequiredNativeClient();
    if (client instanceof RedisClusterClient cluster) {
      return new IdemLettuceConnection(cluster.connect(ByteArrayCodec.INSTANCE), null);
    }
    return new IdemLettuceConnection(null, ((RedisClient) client).connect(ByteArrayCodec.INSTANCE));
  }

  /**
   * @return the non-blocking Redis store on {@link #idemLettuceConnection}'s connection
   * @throws IdemConfigurationException if {@code idem.redis.key-prefix} or {@code idem.protection.*} is invalid
   */
  @Bean
  @ConditionalOnMissingBean(AsyncLeaseStore.class)
  @ConditionalOnBean(ReactiveRedisConnectionFactory.class)
  @Conditional(StoreIsRedis.class)
  AsyncLeaseStore idemAsyncRedisLeaseStore(IdemProperties p, IdemLettuceConnection connection) {
    AsyncRedisLeaseStore.Builder builder = AsyncRedisLeaseStore.builder(connection.client());
    builder.responseProtection(p.getProtection().build());
    if (p.getRedis().getKeyPrefix() != null) {
      configured("idem.redis.key-prefix", () -> builder.keyPrefix(p.getRedis().getKeyPrefix()));
    }
    AsyncRedisLeaseStore store = builder.build();
    LOG.info("Idem: the Redis store without blocking, on Lettuce ({})", store);
    return store;
  }

  /** The store's own Lettuce connection (byte-array codec), to one server or to a cluster. */
  static final class IdemLettuceConnection implements DisposableBean {
    private final StatefulConnection<byte[], byte[]> connection;
    private final LettuceStoreClient client;

    IdemLettuceConnection(io.lettuce.core.cluster.api.@org.jspecify.annotations.Nullable StatefulRedisClusterConnection<byte[], byte[]> cluster,
        io.lettuce.core.api.@org.jspecify.annotations.Nullable StatefulRedisConnection<byte[], byte[]> standalone) {
      if (cluster != null) {
        this.connection = cluster;
        this.client = LettuceStoreClient.of(cluster);
      } else {
        this.connection = java.util.Objects.requireNonNull(standalone, "standalone");
        this.client = LettuceStoreClient.of(standalone);
      }
    }

    LettuceStoreClient client() {
      return client;
    }

    @Override
    public void destroy() {
      if (connection.isOpen()) { // the factory's stop, before this, may have shut its client and this connection down
        connection.close();
      }
    }
  }

  /** {@code idem.store} is {@code redis}, or {@code auto} (the default), which chooses Redis when the application has a Redis connection. */
  static final class StoreIsRedis extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
      String store = context.getEnvironment().getProperty("idem.store", "auto").trim().toLowerCase(Locale.ROOT);
      return store.equals("redis") || store.equals("auto")
          ? ConditionOutcome.match("idem.store is " + store)
          : ConditionOutcome.noMatch("idem.store is " + store);
    }
  }
}
