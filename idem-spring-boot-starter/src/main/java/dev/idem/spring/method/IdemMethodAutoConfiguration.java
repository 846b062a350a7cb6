package dev.idem.spring.method;

import static dev.idem.spring.internal.IdemSettings.maxResponseBytes;
import static dev.idem.spring.internal.ModeDecisions.DATA_SOURCE_UTILS;
import static dev.idem.spring.internal.ModeDecisions.TRANSACTION_MANAGER;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.IdemListener;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.IdemPrincipals;
import dev.idem.spring.internal.IdemSettings;
import dev.idem.spring.internal.IdempotentMethods;
import dev.idem.spring.internal.JsonCodec;
import dev.idem.spring.internal.JsonCodecs;
import dev.idem.spring.internal.PrincipalIntegration;
import dev.idem.spring.internal.ReactiveSecurityPrincipals;
import dev.idem.spring.internal.RequestKeys;
import dev.idem.spring.internal.SpringTransactions;
import dev.idem.spring.keystatus.IdemKeyStatusAutoConfiguration;
import java.lang.reflect.Method;
import java.util.List;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
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
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;

/**
 * {@link Idempotent} service methods: the advisor that runs them through the engines ({@link
 * IdempotentMethodInterceptor}), joining the caller's Spring transaction when there is one on the
 * application's DataSource ({@link MethodTransactions}, only with spring-jdbc and spring-tx), and
 * the start-up check that refuses a bean with such methods when no principal source or no Jackson
 * is there, or when one of them returns a result that comes later ({@link IdempotentReturnTypes}).
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemKeyStatusAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
public class IdemMethodAutoConfiguration {

  private static final String MONO = "reactor.core.publisher.Mono";

  /** Jackson 3 for {@link Idempotent} methods, when it is on the class path ({@link JsonCodecs}). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = JsonCodecs.JACKSON_3)
  static class Jackson3Codec {
    @Bean
    static JsonCodecs.Candidate idemJackson3Codec() {
      return new JsonCodecs.Jackson3();
    }
  }

  /** Jackson 2 for {@link Idempotent} methods, when it is on the class path ({@link JsonCodecs}). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = JsonCodecs.JACKSON_2)
  static class Jackson2Codec {
    @Bean
    static JsonCodecs.Candidate idemJackson2Codec() {
      return new JsonCodecs.Jackson2();
    }
  }

  /**
   * Refuses to start when an {@code @Idempotent} method returns a result that comes later (a
   * {@code Flux}, a {@code CompletableFuture}, a Kotlin {@code suspend} function's, a {@code Mono}
   * where the application has no {@link AsyncLeaseIdempotency}: {@link IdempotentReturnTypes}), when a bean has {@code @Idempotent} methods and no principal
   * source is configured, or when {@code idem.principal} names a source that is not on the class
   * path.
   */
  @Bean
  static SmartInitializingSingleton idemPrincipalCheck(
      ConfigurableListableBeanFactory beans,
      ObjectProvider<IdemProperties> properties,
      ObjectProvider<PrincipalResolver<Object>> resolvers,
      ObjectProvider<PrincipalIntegration> integrations,
      ObjectProvider<dev.idem.core.spi.LeaseStore> store,
      ObjectProvider<JdbcIdempotency> keys,
      ObjectProvider<AsyncLeaseIdempotency> asyncEngines) {
    return () -> {
      IdempotentReturnTypes.check(beans, monoEngine(beans, asyncEngines) != null);
      List<IdempotentMethods.Found> methods = IdempotentMethods.of(beans);
      if (!methods.isEmpty()) {
        // Was: a Redis store for methods was never named at start-up, only the filter's store.
        JdbcIdempotency table = keys.getIfUnique();
        org.slf4j.LoggerFactory.getLogger(IdemAutoConfiguration.class).info(
            "Idem: {} @Idempotent method(s); inside a Spring transaction {}; outside one, lease mode, keys in {}", methods.size(),
            table == null ? "there is no key table to join (no DataSource)" : "they join it, keys in table " + table.table(),
            IdemSettings.describe(store.getIfAvailable()));
      }
      PrincipalResolver<Object> resolver = IdemPrincipals.forMethods(properties.getObject(), resolvers.getIfAvailable(), integrations.orderedStream().toList());
      if (resolver == null) {
        IdemPrincipals.beanWithIdempotentMethods(beans).ifPresent(name -> {
          throw IdemPrincipals.noSource("the @Idempotent methods of bean '" + name + "'");
        });
      }
      if (!JsonCodecs.jacksonPresent(beans)) {
        IdemPrincipals.beanWithIdempotentMethods(beans).ifPresent(name -> {
          throw new IllegalStateException(JsonCodecs.NO_JACKSON + " (the @Idempotent methods of bean '" + name + "')");
        });
      }
    };
  }

  /**
   * @return the engine of {@link Idempotent} methods returning a {@code Mono}: the application's
   *     one {@link AsyncLeaseIdempotency} (a reactive web application with idem-webflux has one),
   *     when Reactor is on the class path; else {@code null}, and such methods are refused
   */
  static @Nullable AsyncLeaseIdempotency monoEngine(ConfigurableListableBeanFactory beans, ObjectProvider<AsyncLeaseIdempotency> engines) {
    return ClassUtils.isPresent(MONO, beans.getBeanClassLoader()) ? engines.getIfUnique() : null;
  }

  /** {@link Idempotent} methods. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  @ConditionalOnMissingBean(name = "idempotentMethodAdvisor")
  static DefaultPointcutAdvisor idempotentMethodAdvisor(
      ConfigurableListableBeanFactory beans,
      ObjectProvider<LeaseIdempotency> lease,
      ObjectProvider<JdbcIdempotency> transactional,
      ObjectProvider<DataSource> dataSource,
      ObjectProvider<PrincipalResolver<Object>> principals,
      ObjectProvider<PrincipalIntegration> integrations,
      ObjectProvider<IdemProperties> properties,
      ObjectProvider<IdemListener> listeners,
      ObjectProvider<MethodTransactions> transactions,
      ObjectProvider<AsyncLeaseIdempotency> asyncEngines) {
    MethodInterceptor advice = new FirstCallInterceptor(beans, lease, transactional, dataSource, principals, integrations, properties,
        listeners, transactions, asyncEngines);
    DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(new AnnotationMatchingPointcut(null, Idempotent.class, true), advice);
    advisor.setOrder(Ordered.LOWEST_PRECEDENCE - 10); // inside @Transactional's advice, so the transaction is open
    return advisor;
  }

  /**
   * The {@link IdempotentMethodInterceptor}, built at the first call rather than with the advisor,
   * so that the advisor does not force early bean creation; once built it is kept. Until it can be
   * built (no principal source, no Jackson) every call fails, saying what is missing.
   */
  private static final class FirstCallInterceptor implements MethodInterceptor {
    private final ConfigurableListableBeanFactory beans;
    private final ObjectProvider<PrincipalResolver<Object>> principals;
    private final ObjectProvider<PrincipalIntegration> integrations;
    private final ObjectProvider<IdemProperties> properties;
    private final SingletonSupplier<IdempotentMethodInterceptor> interceptor;

    FirstCallInterceptor(ConfigurableListableBeanFactory beans, ObjectProvider<LeaseIdempotency> lease,
        ObjectProvider<JdbcIdempotency> transactional, ObjectProvider<DataSource> dataSource,
        ObjectProvider<PrincipalResolver<Object>> principals, ObjectProvider<PrincipalIntegration> integrations,
        ObjectProvider<IdemProperties> properties, ObjectProvider<IdemListener> listeners,
        ObjectProvider<MethodTransactions> transactions, ObjectProvider<AsyncLeaseIdempotency> asyncEngines) {
      this.beans = beans;
      this.principals = principals;
      this.integrations = integrations;
      this.properties = properties;
      this.interceptor = SingletonSupplier.ofNullable(() -> {
        IdemProperties p = properties.getObject();
        PrincipalResolver<Object> resolver = resolver();
        JsonCodec json = resolver == null ? null : JsonCodecs.choose(beans);
        if (json == null) {
          return null; // nothing kept: the call says what is missing
        }
        JdbcIdempotency keys = transactional.getIfAvailable();
        DataSource ds = dataSource.getIfAvailable();
        MethodTransactions joins = transactions.getIfAvailable();
        TransactionalIdempotency joining = keys != null && ds != null && joins != null
            ? joins.engine(keys, ds, listeners.getIfUnique(() -> IdemListener.NONE))
            : null;
        IdempotentMethodInterceptor made = new IdempotentMethodInterceptor(lease.getObject(), joining, joins != null, ds, json, resolver,
            p.getAnonymousPrincipal(), maxResponseBytes(p));
        AsyncLeaseIdempotency monoEngine = monoEngine(beans, asyncEngines);
        if (monoEngine != null) {
          IdemProperties.PrincipalSource source = IdemPrincipals.source(p);
          boolean reactiveSecurity = principals.getIfAvailable() == null
              && (source == IdemProperties.PrincipalSource.AUTO || source == IdemProperties.PrincipalSource.SPRING_SECURITY)
              && ClassUtils.isPresent(ReactiveSecurityPrincipals.CONTEXT_HOLDER, beans.getBeanClassLoader());
          made.monos(monoEngine, reactiveSecurity);
        }
        RequestKeys keysOfRequests = beans.getBeanProvider(RequestKeys.class)
            .getIfAvailable();
        return keysOfRequests == null ? made : made.coveredBy(keysOfRequests);
      });
    }

    private @Nullable PrincipalResolver<Object> resolver() {
      return IdemPrincipals.forMethods(properties.getObject(), principals.getIfAvailable(), integrations.orderedStream().toList());
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
      IdempotentMethodInterceptor target = interceptor.get();
      if (target == null) {
        throw missing(invocation.getMethod());
      }
      return target.invoke(invocation);
    }

    private RuntimeException missing(Method method) {
      if (resolver() == null) {
        return IdemPrincipals.noSource("@Idempotent method " + method);
      }
      return new IllegalStateException(JsonCodecs.NO_JACKSON + " (@Idempotent method " + method + ")");
    }
  }

  /**
   * How {@link Idempotent} methods join the caller's Spring transaction; a bean only with
   * spring-jdbc and spring-tx on the class path. Names no type of either.
   */
  interface MethodTransactions {
    /**
     * @param keys the key table's engine
     * @param dataSource the application's DataSource
     * @param listener told of every result
     * @return the engine that joins the caller's transaction
     */
    TransactionalIdempotency engine(JdbcIdempotency keys, DataSource dataSource, IdemListener listener);
  }

  /** Spring's transactions for {@link Idempotent} methods ({@link SpringTransactions}). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {TRANSACTION_MANAGER, DATA_SOURCE_UTILS})
  static class SpringTransactionsConfiguration {
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static MethodTransactions idemMethodTransactions(ConfigurableListableBeanFactory beans) {
      return (keys, dataSource, listener) -> SpringTransactions.engine(keys, dataSource, beans, listener);
    }
  }
}
