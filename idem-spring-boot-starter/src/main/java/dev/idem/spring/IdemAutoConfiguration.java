package dev.idem.spring;

import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.ResponseProtection;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.redis.RedisDurability;
import dev.idem.redis.RedisLeaseStore;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.servlet.PrincipalResolver;
import dev.idem.servlet.ProblemRenderer;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.ClassUtils;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * Configures Idem from the {@code idem.*} properties ({@link IdemProperties}):
 *
 * <ul>
 *   <li>a {@link LeaseStore}: Redis when idem-redis is on the class path and the application has a
 *       Jedis {@code UnifiedJedis} bean or Spring Data Redis's {@code RedisConnectionFactory}
 *       (spring-boot-starter-data-redis, configured by {@code spring.data.redis.*}), else the
 *       application's {@link DataSource} ({@link JdbcLeaseStore}), else memory (with a warning), or
 *       the one {@code idem.store} names; timed by Micrometer when a {@link MeterRegistry} exists;
 *   <li>the lease-mode engine; both engines tell the {@link IdemListener}, so the Micrometer
 *       counters ({@link MicrometerIdemListener}) move in both modes when a registry exists;
 *   <li>the {@link IdempotencyFilter} on Spring MVC, for the routes of {@code
 *       idem.required-key-routes} and {@code idem.optional-key-routes}, with the limits {@code
 *       idem.max-body-size} and {@code idem.max-response-size} and the problem types of {@code
 *       idem.problem-type-base};
 *   <li>the filter's mode ({@link ModeDecisions}): with {@code idem.mode=auto}, the default,
 *       transactional when the application has one DataSource and a transaction manager of that
 *       DataSource (JDBC or JPA), lease otherwise; logged once at start-up with the store and the
 *       principal source;
 *   <li>in transactional mode, the filter (idem-jdbc's {@link
 *       TransactionalIdempotency} on Spring's transactions, {@link SpringTransactionRunner}): the claim, the handler's writes and the response in one
 *       transaction of the application's DataSource; this needs spring-jdbc and spring-tx ({@code
 *       spring-boot-starter-jdbc}), and without them the application does not start;
 *   <li>{@link Idempotent} service methods, in transactional mode inside a Spring transaction, and
 *       {@link IdemHandlerExceptionResolver}, which answers their refusals in Spring MVC as problem
 *       details;
 *   <li>the principal of every key's scope ({@link IdemPrincipals}): the application's resolver
 *       bean, else Spring Security's authenticated user, else what {@code idem.principal} says;
 *       with no source at all the application does not start, rather than let callers share one
 *       scope.
 * </ul>
 *
 * Every bean can be replaced by one of the application's own. A wrong value stops the start-up
 * with {@link IdemConfigurationException}. Optional libraries (spring-jdbc and spring-tx, the
 * Servlet API and Spring MVC, Spring Security, Jedis, Spring Data Redis, Micrometer) are only touched from nested
 * configurations guarded by {@link ConditionalOnClass} with class names, so the application starts
 * with any subset of them.
 *
 * <p>Runs on Spring Boot 3.5 and 4.x: it is ordered after the DataSource, transaction manager and
 * meter registry auto-configurations of both lines (by name), refers to no class that only one line
 * has, and writes the JSON of {@link Idempotent} methods with Jackson 3 or Jackson 2, whichever the
 * application has ({@link JsonCodecs}).
 */
@AutoConfiguration(afterName = {
    // Spring Boot 3.x
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
    // Spring Boot 4.x: the same auto-configurations, moved into modules with new packages. Names of
    // the other line are not on the class path and Spring Boot ignores them when it sorts.
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnProperty(prefix = "idem", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
public class IdemAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  static final String TRANSACTION_MANAGER = "org.springframework.transaction.PlatformTransactionManager";
  static final String DATA_SOURCE_UTILS = "org.springframework.jdbc.datasource.DataSourceUtils";

  /**
   * How long a claim in transactional mode waits on a running duplicate's row before the duplicate
   * is answered by {@code idem.in-progress}: short, so that waiting duplicates hold no connection.
   */
  static final Duration CLAIM_LOCK_WAIT = Duration.ofMillis(10);

  /** Why transactional mode cannot run without spring-jdbc and spring-tx, and what to add. */
  static final String TRANSACTIONAL_NEEDS_SPRING_JDBC = "transactional runs each request in a Spring transaction on the"
      + " application's DataSource and needs spring-jdbc and spring-tx on the class path: add spring-boot-starter-jdbc"
      + " (it brings both, the DataSource and its transaction manager), or set idem.mode=lease";

  /** The store, chosen by {@code idem.store}. */
  @Bean
  @ConditionalOnMissingBean
  public LeaseStore idemLeaseStore(
      IdemProperties properties,
      ObjectProvider<DataSource> dataSource,
      ObjectProvider<IdemStoreDecorator> decorators,
      ApplicationContext context) {
    LeaseStore store = chooseStore(properties, dataSource.getIfAvailable(), context);
    for (IdemStoreDecorator decorator : decorators.orderedStream().toList()) {
      store = decorator.decorate(store);
    }
    return store;
  }

  private static LeaseStore chooseStore(IdemProperties p, DataSource dataSource, ApplicationContext context) {
    Object redis = redisClient(context);
    IdemProperties.StoreType type = p.getStore();
    if (type == IdemProperties.StoreType.AUTO) {
      type = redis != null ? IdemProperties.StoreType.REDIS
          : dataSource != null ? IdemProperties.StoreType.JDBC
          : IdemProperties.StoreType.MEMORY;
    }
    switch (type) {
      case REDIS:
        if (redis == null) {
          throw new IdemConfigurationException("idem.store", missingRedis(context), null);
        }
        Object durability = configured("idem.redis.durability", () -> RedisStores.durability(p.getRedis().getDurability()));
        return configured("idem.redis.key-prefix", () -> RedisStores.create(redis, p.getRedis().getKeyPrefix(), p.getProtection().build(),
            durability));
      case JDBC:
        if (dataSource == null) {
          throw new IdemConfigurationException("idem.store", "is jdbc, but the application has no DataSource", null);
        }
        return configured("idem.table", () -> JdbcLeaseStore.builder(dataSource).table(p.getTable()).createSchema(p.isCreateSchema())
            .responseProtection(p.getProtection().build()).build());
      case MEMORY:
      default:
        LOG.warn("Idem keeps idempotency keys in memory: they are lost on restart and not shared between instances."
            + " Configure a DataSource or a Redis client for production.");
        return new InMemoryLeaseStore(Clock.systemUTC(), p.getProtection().build());
    }
  }

  static final String UNIFIED_JEDIS = "redis.clients.jedis.UnifiedJedis";
  static final String REDIS_CONNECTION_FACTORY = "org.springframework.data.redis.connection.RedisConnectionFactory";
  static final String REDIS_LEASE_STORE = "dev.idem.redis.RedisLeaseStore";

  /**
   * The Redis client of the store, when idem-redis is on the context's class path: the
   * application's own Jedis {@code UnifiedJedis} bean if it has one (it wins), else Spring Data
   * Redis's {@code RedisConnectionFactory} (from spring-boot-starter-data-redis, configured by
   * {@code spring.data.redis.*}, Lettuce or Jedis), else {@code null}.
   */
  private static Object redisClient(ApplicationContext context) {
    ClassLoader loader = loader(context);
    if (!ClassUtils.isPresent(REDIS_LEASE_STORE, loader)) {
      return null;
    }
    for (String type : new String[] {UNIFIED_JEDIS, REDIS_CONNECTION_FACTORY}) {
      if (!ClassUtils.isPresent(type, loader)) {
        continue;
      }
      try {
        Object client = context.getBeanProvider(ClassUtils.forName(type, loader)).getIfUnique();
        if (client != null) {
          return client;
        }
      } catch (ClassNotFoundException | LinkageError e) {
        // not usable on this class path
      }
    }
    return null;
  }

  /** What idem.store=redis lacks, as the dependencies to add. */
  private static String missingRedis(ApplicationContext context) {
    ClassLoader loader = loader(context);
    String settings = " (Spring Boot then connects with the spring.data.redis.* settings, through Lettuce or, with"
        + " spring.data.redis.client-type=jedis, Jedis), or declare a Jedis UnifiedJedis bean";
    if (!ClassUtils.isPresent(REDIS_LEASE_STORE, loader)) {
      return "is redis, but dev.idem:idem-redis is not on the class path: add the dependencies dev.idem:idem-redis and"
          + " org.springframework.boot:spring-boot-starter-data-redis" + settings;
    }
    if (!ClassUtils.isPresent(REDIS_CONNECTION_FACTORY, loader)) {
      return "is redis, but the application has no Redis connection: add the dependency"
          + " org.springframework.boot:spring-boot-starter-data-redis" + settings;
    }
    return "is redis, but the application has no single RedisConnectionFactory bean (is Spring Boot's Redis"
        + " auto-configuration of spring-boot-starter-data-redis excluded, or are there several factories?): keep one,"
        + " mark one @Primary, or declare a Jedis UnifiedJedis bean";
  }

  private static ClassLoader loader(ApplicationContext context) {
    return context.getClassLoader() != null ? context.getClassLoader() : IdemAutoConfiguration.class.getClassLoader();
  }

  /** Builds the Redis store; loaded only when idem-redis is present. */
  private static final class RedisStores {
    static LeaseStore create(Object client, String keyPrefix, ResponseProtection protection, Object durability) {
      RedisDurability d = (RedisDurability) durability;
      RedisLeaseStore.Builder builder = JedisStores.is(client) ? JedisStores.builder(client) : SpringDataRedisStores.builder(client, d);
      builder.responseProtection(protection);
      if (keyPrefix != null) {
        builder.keyPrefix(keyPrefix);
      }
      return builder.durability(d).build();
    }

    /** idem.redis.durability.*: replicas 0 is none; otherwise replicas(n, timeout), with aof WAITAOF. */
    static Object durability(IdemProperties.Durability d) {
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

  /** The application's Jedis client; loaded only when it is one. */
  private static final class JedisStores {
    static boolean is(Object client) {
      for (Class<?> c = client.getClass(); c != null; c = c.getSuperclass()) {
        if (c.getName().equals(UNIFIED_JEDIS)) {
          return true;
        }
      }
      return false;
    }

    static RedisLeaseStore.Builder builder(Object client) {
      return RedisLeaseStore.builder((UnifiedJedis) client);
    }
  }

  /** Spring Data Redis's connection factory; loaded only when it is one. */
  private static final class SpringDataRedisStores {
    static RedisLeaseStore.Builder builder(Object client, RedisDurability durability) {
      RedisConnectionFactory factory = (RedisConnectionFactory) client;
      if (!durability.isNone() && SpringDataRedisStoreClient.clusterAware(factory)) {
        throw new IdemConfigurationException("idem.redis.durability", SpringDataRedisStoreClient.CLUSTER_DURABILITY, null);
      }
      return RedisLeaseStore.builderFor(new SpringDataRedisStoreClient(factory));
    }
  }

  /**
   * The lease-mode engine. In transactional mode the filter takes no lease (only {@link Idempotent}
   * methods called outside a transaction use this engine), so a retention shorter than the default
   * lease is no configuration error there: unless {@code idem.lease} is set, the lease is then half
   * the retention.
   */
  @Bean
  @ConditionalOnMissingBean
  public LeaseIdempotency idemLeaseIdempotency(
      IdemProperties p, LeaseStore store, ObjectProvider<IdemListener> listeners, Environment environment,
      ObjectProvider<ModeDecision> mode) {
    IdemListener listener = listeners.getIfUnique(() -> IdemListener.NONE);
    InProgressPolicy inProgress = inProgressPolicy(p);
    LeaseIdempotency.Builder builder = LeaseIdempotency.builder(store).listener(listener).inProgress(inProgress);
    Duration lease = p.getLease();
    ModeDecision decision = mode.getIfAvailable();
    boolean transactional = decision != null ? decision.mode == IdemProperties.Mode.TRANSACTIONAL
        : p.getMode() == IdemProperties.Mode.TRANSACTIONAL;
    if (transactional && !environment.containsProperty("idem.lease")
        && p.getRetention() != null && lease != null && p.getRetention().compareTo(lease) <= 0) {
      lease = p.getRetention().dividedBy(2);
    }
    Duration chosenLease = lease;
    configured("idem.lease", () -> builder.lease(chosenLease));
    configured("idem.retention", () -> builder.retention(p.getRetention()));
    return configured("idem.retention", builder::build);
  }

  /**
   * The transactional engine for {@link Idempotent} methods inside Spring transactions and for the
   * filter with {@code idem.mode=transactional}: only with spring-jdbc and spring-tx.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {TRANSACTION_MANAGER, DATA_SOURCE_UTILS})
  static class SpringJdbcConfiguration {

    /** The transactional engine of the key table. */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(DataSource.class)
    JdbcIdempotency idemJdbcIdempotency(IdemProperties p, DataSource dataSource) {
      // A duplicate of a running request gives up on its row after this instead of holding a
      // pooled connection for as long as the first attempt runs (PostgreSQL, MariaDB).
      JdbcIdempotency.Builder builder = JdbcIdempotency.builder().createSchema(p.isCreateSchema()).claimLockWait(CLAIM_LOCK_WAIT);
      configured("idem.protection", () -> builder.responseProtection(p.getProtection().build()));
      configured("idem.table", () -> builder.table(p.getTable()));
      configured("idem.retention", () -> builder.retention(p.getRetention()));
      builder.strategy(p.getStrategy() == IdemProperties.Strategy.CLAIM_FIRST
          ? JdbcIdempotency.Strategy.CLAIM_FIRST : JdbcIdempotency.Strategy.KEY_LAST);
      JdbcIdempotency idem = builder.build();
      if (p.isCreateSchema()) {
        // At start-up, on a connection of its own: created inside a caller's transaction, the table
        // would vanish if that transaction rolled back.
        try (Connection c = dataSource.getConnection()) {
          idem.createSchema(c);
        } catch (SQLException e) {
          throw new IdemStoreException("cannot create the idempotency table " + p.getTable() + ": " + e.getMessage(), e);
        }
      }
      return idem;
    }

    /**
     * The filter's mode ({@code idem.mode}, auto by default; see {@link ModeDecisions}) and, in
     * transactional mode, its engine: idem-jdbc's transactional engine on Spring's transactions,
     * told to the application's {@link IdemListener} (Micrometer's, when there is a registry), or
     * the application's own {@link TransactionalIdempotency} bean.
     */
    @Bean
    @ConditionalOnClass(name = "jakarta.servlet.Filter")
    ModeDecision idemModeDecision(
        ConfigurableListableBeanFactory beans,
        IdemProperties p,
        ObjectProvider<TransactionalIdempotency> own,
        ObjectProvider<JdbcIdempotency> jdbcIdempotency,
        ObjectProvider<DataSource> dataSource,
        ObjectProvider<PlatformTransactionManager> transactionManager,
        ObjectProvider<IdemListener> listeners) {
      return ModeDecisions.decide(beans, p, own.getIfUnique(), jdbcIdempotency.getIfUnique(), dataSource.getIfUnique(),
          transactionManager.getIfUnique(), listeners.getIfUnique(() -> IdemListener.NONE), inProgressPolicy(p));
    }
  }

  /**
   * {@code idem.mode=transactional} without spring-jdbc or spring-tx: refuses to start, naming what
   * to add, in every kind of application (the filter's configuration checks it again, for
   * applications that initialize beans lazily).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnProperty(prefix = "idem", name = "mode", havingValue = "transactional")
  static class TransactionalModeRequirements {
    TransactionalModeRequirements(ApplicationContext context) {
      if (!springJdbcPresent(context)) {
        throw new IdemConfigurationException("idem.mode", TRANSACTIONAL_NEEDS_SPRING_JDBC, null);
      }
    }
  }

  static boolean springJdbcPresent(ApplicationContext context) {
    return springJdbcPresent(context.getClassLoader());
  }

  static boolean springJdbcPresent(ClassLoader loader) {
    return ClassUtils.isPresent(TRANSACTION_MANAGER, loader) && ClassUtils.isPresent(DATA_SOURCE_UTILS, loader);
  }

  /** The principal sources of Spring Security, only when it is on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.security.core.context.SecurityContextHolder")
  static class SpringSecurityPrincipalConfiguration {
    @Bean
    static PrincipalIntegration idemSpringSecurityPrincipals() {
      return new SpringSecurityPrincipals();
    }
  }

  /** The servlet container's user for {@code @Idempotent} methods, with spring-web and the Servlet API. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"org.springframework.web.context.request.RequestContextHolder", "jakarta.servlet.http.HttpServletRequest"})
  static class ServletRequestPrincipalConfiguration {
    @Bean
    static PrincipalIntegration idemServletRequestPrincipals() {
      return new ServletRequestPrincipals();
    }
  }

  /**
   * Refuses to start when a bean has {@code @Idempotent} methods and no principal source is
   * configured, or when {@code idem.principal} names a source that is not on the class path.
   */
  @Bean
  static SmartInitializingSingleton idemPrincipalCheck(
      ConfigurableListableBeanFactory beans,
      ObjectProvider<IdemProperties> properties,
      ObjectProvider<IdemPrincipalResolver> resolvers,
      ObjectProvider<PrincipalIntegration> integrations) {
    return () -> {
      IdemPrincipalResolver resolver = IdemPrincipals.forMethods(properties.getObject(), resolvers.getIfAvailable(), integrations.orderedStream().toList());
      if (resolver == null) {
        IdemPrincipals.beanWithIdempotentMethods(beans).ifPresent(name -> {
          throw IdemPrincipals.noSource("the @Idempotent methods of bean '" + name + "'");
        });
      }
      if (!JsonCodecs.jacksonPresent(beans.getBeanClassLoader())) {
        IdemPrincipals.beanWithIdempotentMethods(beans).ifPresent(name -> {
          throw new IllegalStateException(JsonCodecs.NO_JACKSON + " (the @Idempotent methods of bean '" + name + "')");
        });
      }
    };
  }

  /** {@link Idempotent} methods. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  @ConditionalOnMissingBean(name = "idempotentMethodAdvisor")
  public static DefaultPointcutAdvisor idempotentMethodAdvisor(
      ConfigurableListableBeanFactory beans,
      ObjectProvider<LeaseIdempotency> lease,
      ObjectProvider<JdbcIdempotency> transactional,
      ObjectProvider<DataSource> dataSource,
      ObjectProvider<IdemPrincipalResolver> principals,
      ObjectProvider<PrincipalIntegration> integrations,
      ObjectProvider<IdemProperties> properties,
      ObjectProvider<IdemListener> listeners) {
    // Resolved lazily, at the first call, so that the advisor does not force early bean creation.
    IdempotentMethodInterceptor[] interceptor = new IdempotentMethodInterceptor[1];
    MethodInterceptor lazy = invocation -> {
      synchronized (interceptor) {
        if (interceptor[0] == null) {
          IdemProperties p = properties.getObject();
          IdemPrincipalResolver resolver = IdemPrincipals.forMethods(p, principals.getIfAvailable(), integrations.orderedStream().toList());
          if (resolver == null) {
            throw IdemPrincipals.noSource("@Idempotent method " + invocation.getMethod());
          }
          JsonCodec json = JsonCodecs.choose(beans, beans.getBeanClassLoader());
          if (json == null) {
            throw new IllegalStateException(JsonCodecs.NO_JACKSON + " (@Idempotent method " + invocation.getMethod() + ")");
          }
          JdbcIdempotency keys = transactional.getIfAvailable();
          DataSource ds = dataSource.getIfAvailable();
          TransactionalIdempotency joining = keys != null && ds != null && springJdbcPresent(beans.getBeanClassLoader())
              ? SpringTransactions.engine(keys, ds, beans, listeners.getIfUnique(() -> IdemListener.NONE))
              : null;
          interceptor[0] = new IdempotentMethodInterceptor(lease.getObject(), joining, ds, json, resolver, p.getAnonymousPrincipal(),
              maxResponseBytes(p));
        }
      }
      return interceptor[0].invoke(invocation);
    };
    DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(new AnnotationMatchingPointcut(null, Idempotent.class, true), lazy);
    advisor.setOrder(Ordered.LOWEST_PRECEDENCE - 10); // inside @Transactional's advice, so the transaction is open
    return advisor;
  }

  /**
   * {@link IdemRabbitListeners} for {@code @RabbitListener} methods, only when spring-rabbit and
   * idem-outbox (with the RabbitMQ client) are on the class path.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter",
      "dev.idem.consumer.rabbitmq.RabbitMqIdempotentConsumer", "com.rabbitmq.client.Channel"})
  static class RabbitListenerConfiguration {
    @Bean
    @ConditionalOnMissingBean
    IdemRabbitListeners idemRabbitListeners(ObjectProvider<JdbcIdempotency> jdbc, ObjectProvider<DataSource> dataSource,
        ObjectProvider<LeaseIdempotency> leases) {
      return new IdemRabbitListeners(jdbc, dataSource, leases);
    }
  }

  /**
   * Micrometer meters, only when Micrometer is on the class path and the application has a
   * registry: the rest of the configuration never touches Micrometer's types.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
  static class MetricsConfiguration {
    @Bean
    @ConditionalOnBean(MeterRegistry.class)
    @ConditionalOnMissingBean(IdemListener.class)
    IdemListener micrometerIdemListener(MeterRegistry registry) {
      return new MicrometerIdemListener(registry);
    }

    @Bean
    @ConditionalOnBean(MeterRegistry.class)
    IdemStoreDecorator timedIdemStore(MeterRegistry registry) {
      return store -> new TimedLeaseStore(store, registry);
    }
  }

  /** The filter's configuration, with the Servlet API on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "jakarta.servlet.Filter")
  static class ServletConfiguration {

    /** The filter's configuration, from the properties. */
    @Bean
    @ConditionalOnMissingBean
    IdempotencyFilterConfig idemFilterConfig(
        IdemProperties p,
        ApplicationContext context,
        ObjectProvider<LeaseIdempotency> leaseEngine,
        ObjectProvider<ModeDecision> modeDecision,
        ObjectProvider<LeaseStore> store,
        ObjectProvider<PrincipalResolver> filterPrincipals,
        ObjectProvider<IdemPrincipalResolver> methodPrincipals,
        ObjectProvider<PrincipalIntegration> integrations,
        ObjectProvider<ProblemRenderer> problemRenderer) {
      ModeDecision mode;
      if (springJdbcPresent(context)) {
        mode = modeDecision.getObject();
      } else if (p.getMode() == IdemProperties.Mode.TRANSACTIONAL) {
        throw new IdemConfigurationException("idem.mode", TRANSACTIONAL_NEEDS_SPRING_JDBC, null);
      } else {
        mode = ModeDecision.lease(p.getMode() == IdemProperties.Mode.LEASE ? "idem.mode=lease"
            : "auto: spring-jdbc and spring-tx are not on the class path, so there is no transaction to join");
      }
      IdempotencyEngine engine = mode.engine != null ? mode.engine : leaseEngine.getObject();
      IdempotencyFilterConfig.Builder b = IdempotencyFilterConfig.builder(engine);
      for (String route : p.getRequiredKeyRoutes()) {
        String[] parts = route("idem.required-key-routes", route);
        configured("idem.required-key-routes", () -> b.route(parts[0], parts[1], KeyRequirement.REQUIRED));
      }
      for (String route : p.getOptionalKeyRoutes()) {
        String[] parts = route("idem.optional-key-routes", route);
        configured("idem.optional-key-routes", () -> b.route(parts[0], parts[1], KeyRequirement.OPTIONAL));
      }
      long bytes = p.getMaxBodySize().toBytes();
      if (bytes > Integer.MAX_VALUE) {
        throw new IdemConfigurationException("idem.max-body-size", "must be at most 256MB, was " + p.getMaxBodySize(), null);
      }
      configured("idem.max-body-size", () -> b.maxBodyBytes((int) bytes));
      b.maxResponseBytes(maxResponseBytes(p));
      configured("idem.max-retry-after", () -> b.maxRetryAfter(p.getMaxRetryAfter()));
      configured("idem.problem-type-base", () -> problemTypeBase(b, p.getProblemTypeBase()));
      configured("idem.anonymous-principal", () -> b.anonymousPrincipal(p.getAnonymousPrincipal()));
      problemRenderer.ifUnique(b::problemRenderer); // the application's own error format, else RFC 9457
      PrincipalResolver filterBean = filterPrincipals.getIfAvailable();
      IdemPrincipalResolver methodBean = methodPrincipals.getIfAvailable();
      List<PrincipalIntegration> sources = integrations.orderedStream().toList();
      b.principalResolver(FilterPrincipals.choose(p, filterBean, methodBean, sources));
      IdempotencyFilterConfig config = configured("idem.required-key-routes", b::build);
      LOG.info("Idem: {} mode ({}); keys in {}; principal from {}",
          mode.mode.name().toLowerCase(Locale.ROOT), mode.reason,
          mode.mode == IdemProperties.Mode.TRANSACTIONAL ? "table " + p.getTable() + " of that DataSource" : describe(store.getIfAvailable()),
          FilterPrincipals.describe(p, filterBean, methodBean, sources));
      return config;
    }

    /** {@code about:blank} leaves the type out; anything else must be a valid base. */
    private static IdempotencyFilterConfig.Builder problemTypeBase(IdempotencyFilterConfig.Builder b, URI base) {
      if (base == null) {
        throw new IllegalArgumentException("must be an absolute URI ending in '/' (or ':' for a URN), or about:blank to leave the problem type out");
      }
      if (base.toString().equalsIgnoreCase("about:blank")) {
        return b.aboutBlankProblemTypes();
      }
      return b.problemTypeBase(base);
    }

    private static String[] route(String property, String route) {
      String[] parts = route == null ? new String[0] : route.trim().split("\\s+");
      if (parts.length != 2) {
        throw new IdemConfigurationException(property, "each route is \"METHOD /path-pattern\", e.g. \"POST /notes\"; got \"" + route + "\"", null);
      }
      parts[0] = parts[0].toUpperCase(Locale.ROOT);
      return parts;
    }
  }

  /** Registers the filter, and Idem's answers for Spring MVC, on a servlet web application. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(name = {"jakarta.servlet.Filter", "org.springframework.boot.web.servlet.FilterRegistrationBean"})
  static class WebConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "idempotencyFilter")
    FilterRegistrationBean<IdempotencyFilter> idempotencyFilter(IdempotencyFilterConfig config) {
      if (config.principalResolver() == FilterPrincipals.NONE) {
        throw IdemPrincipals.noSource("the Idempotency-Key filter");
      }
      FilterRegistrationBean<IdempotencyFilter> registration = new FilterRegistrationBean<>(new IdempotencyFilter(config));
      registration.setName("idempotencyFilter");
      registration.addUrlPatterns("/*");
      // After security filters (which set the principal), before the application's own handlers.
      registration.setOrder(Ordered.LOWEST_PRECEDENCE - 100);
      return registration;
    }

    /** 422 / 400 / 409 / 503 problem details for {@link Idempotent} methods in Spring MVC. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.web.servlet.HandlerExceptionResolver")
    static class MvcConfiguration {
      @Bean
      @ConditionalOnMissingBean
      IdemHandlerExceptionResolver idemHandlerExceptionResolver(IdempotencyFilterConfig config) {
        return new IdemHandlerExceptionResolver(config);
      }
    }
  }

  /** @return {@code idem.in-progress} and {@code idem.max-wait}, for both modes */
  static InProgressPolicy inProgressPolicy(IdemProperties p) {
    return p.getInProgress() == IdemProperties.InProgress.WAIT
        ? configured("idem.max-wait", () -> InProgressPolicy.waitUpTo(p.getMaxWait()))
        : InProgressPolicy.failFast();
  }

  /** @return the store in words for the start-up log line */
  static String describe(LeaseStore store) {
    LeaseStore s = store instanceof TimedLeaseStore timed ? timed.delegate() : store;
    if (s == null) {
      return "no store";
    }
    if (s instanceof InMemoryLeaseStore) {
      return "memory (lost on restart, not shared between instances)";
    }
    return s.getClass().getSimpleName();
  }

  /** {@code idem.max-response-size} in bytes, for the filter and for {@link Idempotent} methods. */
  static int maxResponseBytes(IdemProperties p) {
    return configured("idem.max-response-size", () -> {
      if (p.getMaxResponseSize() == null) {
        throw new IllegalArgumentException("must be set, between 0B and 64MB");
      }
      long bytes = p.getMaxResponseSize().toBytes();
      if (bytes < 0 || bytes > IdempotencyFilterConfig.MAX_RESPONSE_BYTES_LIMIT) {
        throw new IllegalArgumentException("must be between 0B and 64MB, was " + p.getMaxResponseSize());
      }
      return (int) bytes;
    });
  }

  static <T> T configured(String property, Supplier<T> build) {
    try {
      return build.get();
    } catch (IllegalArgumentException | NullPointerException e) {
      throw new IdemConfigurationException(property, e.getMessage(), e);
    }
  }
}
