package dev.idem.spring.internal;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import java.time.Clock;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store {@code idem.store} chooses, for the store concern's bean and for a route's own store
 * ({@link PolicyEngines}), and whether the key table in the DataSource is Idem's. Stateless.
 */
public final class StoreChoice {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  private StoreChoice() {}

  /** How Spring Boot connects to Redis, for the messages that ask for a Redis client. */
  public static final String REDIS_SETTINGS = " (Spring Boot then connects with the spring.data.redis.* settings, through Lettuce or,"
      + " with spring.data.redis.client-type=jedis, Jedis), or declare a Jedis UnifiedJedis bean";

  /** Why {@code idem.store=redis} cannot run without idem-redis, and what to add. */
  public static final String NO_IDEM_REDIS = "is redis, but dev.idem:idem-redis is not on the class path: add the dependencies"
      + " dev.idem:idem-redis and org.springframework.boot:spring-boot-starter-data-redis" + REDIS_SETTINGS;

  /** Why {@code idem.store=r2dbc} gives no store to blocking callers, and where it applies. */
  public static final String R2DBC_WEBFLUX_ONLY = "is r2dbc, the non-blocking key table of WebFlux applications"
      + " (dev.idem:idem-r2dbc's R2dbcLeaseStore), which needs a reactive web application with dev.idem:idem-webflux,"
      + " dev.idem:idem-r2dbc and one R2DBC ConnectionFactory (org.springframework.boot:spring-boot-starter-data-r2dbc"
      + " with spring.r2dbc.url); a Spring MVC application keeps its keys with idem.store=jdbc or redis";

  /**
   * @param dataSource whether the application has a DataSource for the store
   * @param redis the Redis stores, or {@code null} without idem-redis
   * @return the store {@code idem.store} stands for: {@code auto} is Redis with a Redis client, else
   *     JDBC with a DataSource, else memory
   */
  public static IdemProperties.StoreType resolve(IdemProperties p, boolean dataSource, RedisStores redis) {
    IdemProperties.StoreType type = p.getStore();
    if (type != IdemProperties.StoreType.AUTO) {
      return type;
    }
    return redis != null && redis.hasClient() ? IdemProperties.StoreType.REDIS
        : dataSource ? IdemProperties.StoreType.JDBC
        : IdemProperties.StoreType.MEMORY;
  }

  /**
   * A store of the given type, as {@code idem.store} would choose it (a route's own store, {@link
   * PolicyEngines}), undecorated.
   *
   * @param property the property that asked for it, for messages
   * @throws IdemConfigurationException if the store cannot be made here
   */
  public static LeaseStore chooseStore(IdemProperties p, IdemProperties.StoreType type, String property, DataSource dataSource,
      RedisStores redis) {
    boolean redisClient = redis != null && redis.hasClient();
    if (type == IdemProperties.StoreType.AUTO) {
      type = resolve(p, dataSource != null, redis);
    }
    switch (type) {
      case REDIS:
        if (!redisClient) {
          throw new IdemConfigurationException(property, redis == null ? NO_IDEM_REDIS : redis.missing(), null);
        }
        return redis.create(p);
      case JDBC:
        if (dataSource == null) {
          throw new IdemConfigurationException(property, "is jdbc, but the application has no DataSource", null);
        }
        return configured("idem.table", () -> JdbcLeaseStore.builder(dataSource).table(p.getTable()).createSchema(p.isCreateSchema())
            .responseProtection(p.getProtection().build()).build());
      case R2DBC:
        throw new IdemConfigurationException(property, R2DBC_WEBFLUX_ONLY, null);
      case MEMORY:
      default:
        LOG.warn("Idem keeps idempotency keys in memory: they are lost on restart and not shared between instances."
            + " Configure a DataSource or a Redis client for production (on WebFlux, where those block: an AsyncLeaseStore bean).");
        return new InMemoryLeaseStore(Clock.systemUTC(), p.getProtection().build());
    }
  }

  /**
   * Whether the key table in the DataSource is Idem's store: in transactional mode, when {@code
   * idem.store} stands for the JDBC store, and when both {@code idem.mode} and {@code idem.store}
   * are {@code auto} (the mode may then be transactional; {@link ModeDecisions}). Not with {@code
   * idem.mode=lease}, or {@code idem.mode=auto} and {@code idem.store} set, on Redis or memory.
   *
   * @param redis the Redis stores, or {@code null} without idem-redis
   */
  public static boolean keyTableInUse(IdemProperties p, RedisStores redis) {
    IdemProperties.Mode mode = p.getMode() == null ? IdemProperties.Mode.AUTO : p.getMode();
    if (mode == IdemProperties.Mode.TRANSACTIONAL) {
      return true;
    }
    if (mode == IdemProperties.Mode.AUTO && p.getStore() == IdemProperties.StoreType.AUTO) {
      return true;
    }
    return resolve(p, true, redis) == IdemProperties.StoreType.JDBC;
  }
}
