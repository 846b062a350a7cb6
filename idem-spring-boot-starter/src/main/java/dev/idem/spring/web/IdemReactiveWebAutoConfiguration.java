package dev.idem.spring.web;

import static dev.idem.spring.internal.IdemSettings.configured;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.IdemListener;
import dev.idem.core.spi.AsyncLeaseStore;
import dev.idem.core.spi.LeaseStore;
import dev.idem.r2dbc.R2dbcLeaseStore;
import dev.idem.r2dbc.R2dbcTransactionalIdempotency;
import dev.idem.r2dbc.R2dbcTransactions;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.internal.IdemPrincipals;
import dev.idem.spring.internal.IdemSettings;
import dev.idem.spring.internal.SpringR2dbcTransactions;
import dev.idem.spring.internal.TimedLeaseStore;
import dev.idem.spring.store.IdemAsyncRedisStoreAutoConfiguration;
import dev.idem.spring.store.IdemStoreAutoConfiguration;
import dev.idem.webflux.IdempotencyWebFilter;
import dev.idem.webflux.IdempotencyWebFilterConfig;
import dev.idem.webflux.TransactionalEngine;
import io.r2dbc.spi.ConnectionFactory;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;
import org.springframework.r2dbc.connection.R2dbcTransactionManager;
import org.springframework.transaction.ReactiveTransactionManager;
import org.springframework.util.ClassUtils;
import reactor.core.publisher.Mono;

/**
 * A reactive web application (Spring WebFlux): with idem-webflux on the class path, registers its
 * {@link IdempotencyWebFilter} from the same {@code idem.*} properties as the servlet filter, on
 * lease mode without blocking ({@link AsyncLeaseIdempotency}); without it, refuses to start, since
 * no request would be protected. Either refusal is a bean factory post-processor, so it happens
 * before any bean is created, with lazy initialisation too. A non-web application and a servlet
 * one are not concerned.
 *
 * <p>On WebFlux, what is supported is transactional mode on R2DBC ({@code idem.mode} {@code auto}
 * or {@code transactional} beside an R2DBC {@code ConnectionFactory}, with idem-r2dbc and Spring's
 * R2DBC support: {@link R2dbcTransactionalConfiguration}), where the handlers' writes through
 * {@code DatabaseClient} or Spring Data R2DBC repositories commit with the key; and lease mode on a
 * non-blocking store ({@link AsyncLeaseStore}): the R2DBC key table ({@code R2dbcLeaseStore}, with
 * {@code idem.mode=lease}), Redis on Lettuce ({@link IdemAsyncRedisStoreAutoConfiguration}), the
 * in-memory store, or the application's own {@code AsyncLeaseStore} bean. Transactional mode on
 * JDBC ({@code idem.mode=transactional} without R2DBC, or {@code auto} with only a {@link
 * DataSource}), a blocking store (JDBC, Redis on Jedis) and per-route policies ({@code
 * idem.routes.*}) refuse the start-up and say so.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemWebAutoConfiguration.class, IdemStoreAutoConfiguration.class,
    IdemAsyncRedisStoreAutoConfiguration.class},
    afterName = {"org.springframework.boot.autoconfigure.r2dbc.R2dbcAutoConfiguration",
        "org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration"})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
public class IdemReactiveWebAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  /** What is not protected without idem-webflux, part of the refusal. */
  static final String UNSUPPORTED = "this is a reactive web application (Spring WebFlux), and idem-webflux, Idem's WebFlux"
      + " filter, is not on the class path: no request would be protected, idem.required-key-routes and"
      + " idem.optional-key-routes would be ignored, and a retry with the same key would run its handler again";

  /** What is supported and the ways out, part of the refusal. */
  static final String SUPPORTED = "Idem protects WebFlux applications with dev.idem:idem-webflux (lease mode on a"
      + " non-blocking store) and Spring MVC (spring-boot-starter-web) with its servlet filter. To run this"
      + " application without Idem, set idem.enabled=false or exclude the auto-configuration"
      + " (spring.autoconfigure.exclude=dev.idem.spring.IdemAutoConfiguration)";

  /** Why transactional mode on JDBC does not run on WebFlux, part of its refusal. */
  static final String TRANSACTIONAL_UNSUPPORTED = "this is a reactive web application (Spring WebFlux), where Idem runs"
      + " transactional mode on R2DBC only: on JDBC it would run the handler inside a JDBC transaction on the request's"
      + " thread, which would block an event loop";

  /** What transactional mode on WebFlux needs, part of its refusal. */
  static final String R2DBC_MISSING = "; transactional mode on WebFlux needs dev.idem:idem-r2dbc, Spring's R2DBC support"
      + " (spring-boot-starter-data-r2dbc, with its R2dbcTransactionManager) and one R2DBC ConnectionFactory (spring.r2dbc.url),"
      + " PostgreSQL or MariaDB/MySQL, with idem.store auto or r2dbc";

  /** What is supported on WebFlux, part of the refusals of transactional mode and of blocking stores. */
  static final String WEBFLUX_SUPPORTED = "on WebFlux Idem supports transactional mode on R2DBC (idem.mode=auto or"
      + " transactional, with dev.idem:idem-r2dbc, spring-boot-starter-data-r2dbc and an R2DBC ConnectionFactory: the handlers'"
      + " DatabaseClient and repository writes commit with the key) and lease mode (idem.mode=lease) on a non-blocking store:"
      + " the R2DBC key table (idem.store=r2dbc, with dev.idem:idem-r2dbc and an R2DBC ConnectionFactory, PostgreSQL or"
      + " MariaDB/MySQL), Redis (idem.store=redis with dev.idem:idem-redis and spring-boot-starter-data-redis-reactive, on"
      + " Lettuce), the in-memory store (idem.store=memory, one instance only) or an AsyncLeaseStore bean of the application;"
      + " per-route policies (idem.routes.*) are not supported there yet. To run this application without Idem,"
      + " set idem.enabled=false";

  /** What a WebFlux application without a principal source can do (idem.principal=servlet and PrincipalResolver beans do not apply). */
  static final String WEBFLUX_CHOICES = "add Spring Security (spring-boot-starter-security, which sets the exchange's principal on"
      + " WebFlux) to scope keys by the authenticated user, or set idem.principal=shared if the application is single-tenant and"
      + " any caller may receive any other caller's stored answer";

  /** The classes transactional mode on R2DBC needs, as {@link R2dbcTransactionalConfiguration}'s condition lists them. */
  static final String[] R2DBC_TRANSACTIONAL_CLASSES = {"dev.idem.webflux.IdempotencyWebFilter",
      "dev.idem.r2dbc.R2dbcTransactionalIdempotency", "io.r2dbc.spi.ConnectionFactory",
      "org.springframework.r2dbc.connection.R2dbcTransactionManager"};

  /** Without idem-webflux: nothing would protect the requests. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass("dev.idem.webflux.IdempotencyWebFilter")
  static class WithoutWebFluxFilter {

    /** @return a post-processor that stops the start-up with {@link IdemUnsupportedException} */
    @Bean
    static BeanFactoryPostProcessor idemReactiveWebRefusal() {
      return beanFactory -> {
        throw new IdemUnsupportedException(UNSUPPORTED, SUPPORTED);
      };
    }
  }

  /** With idem-webflux: its filter on lease mode, or a refusal of what it cannot run. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.idem.webflux.IdempotencyWebFilter")
  static class WebFluxFilterConfiguration {

    /**
     * @return a post-processor that stops the start-up with {@link IdemUnsupportedException} when
     *     the configuration asks for transactional mode: {@code idem.mode=transactional}, or {@code
     *     auto} (the default) with a {@link DataSource} bean
     */
    @Bean
    static BeanFactoryPostProcessor idemReactiveTransactionalRefusal() {
      return beanFactory -> {
        Environment environment = beanFactory.getBean(Environment.class);
        String mode = environment.getProperty("idem.mode", "auto").trim().toLowerCase(Locale.ROOT);
        String store = environment.getProperty("idem.store", "auto").trim().toLowerCase(Locale.ROOT);
        if (transactionalOnR2dbc(environment, beanFactory)) {
          return; // R2dbcTransactionalConfiguration runs it
        }
        if (mode.equals("transactional")) {
          throw new IdemUnsupportedException(TRANSACTIONAL_UNSUPPORTED + ", and idem.mode=transactional asks for it"
              + R2DBC_MISSING, WEBFLUX_SUPPORTED);
        }
        // auto beside an R2DBC ConnectionFactory without idem-r2dbc: the keys would silently live in
        // this instance's memory instead of the application's database
        if (mode.equals("auto") && store.equals("auto") && hasConnectionFactory(beanFactory)
            && !ClassUtils.isPresent("dev.idem.r2dbc.R2dbcTransactionalIdempotency", beanFactory.getBeanClassLoader())) {
          throw new IdemUnsupportedException("this reactive web application has an R2DBC ConnectionFactory, and"
              + " dev.idem:idem-r2dbc, Idem's R2DBC module, is not on the class path: idem.mode=auto would keep the keys in"
              + " this instance's memory, apart from the handlers' writes", "add dev.idem:idem-r2dbc (transactional mode:"
              + " the handlers' writes and the keys commit together in the ConnectionFactory's database), or choose the store:"
              + " idem.store=memory (one instance only) or idem.store=redis; " + WEBFLUX_SUPPORTED);
        }
        // auto is transactional beside a DataSource only when idem.store is auto or jdbc (ModeDecisions)
        if (mode.equals("auto") && (store.equals("auto") || store.equals("jdbc"))
            && beanFactory.getBeanNamesForType(DataSource.class, true, false).length > 0) {
          throw new IdemUnsupportedException(TRANSACTIONAL_UNSUPPORTED + ", and idem.mode=auto with a DataSource would"
              + " choose it" + R2DBC_MISSING, "set idem.mode=lease and idem.store=memory (keys in this instance's memory, one"
              + " instance only), or idem.store=redis, or idem.mode=lease and an AsyncLeaseStore bean of the application; "
              + WEBFLUX_SUPPORTED);
        }
      };
    }

    /**
     * The non-blocking lease-mode engine, on the application's {@link AsyncLeaseStore} bean, else
     * on the {@link LeaseStore} bean when it is non-blocking too (the in-memory store), with {@code
     * idem.lease}, {@code idem.retention}, {@code idem.in-progress} and {@code idem.max-wait}.
     *
     * @throws IdemUnsupportedException if the store blocks
     */
    @Bean
    @Lazy // in transactional mode nothing asks for it
    @ConditionalOnMissingBean
    AsyncLeaseIdempotency idemAsyncLeaseIdempotency(IdemProperties p, ObjectProvider<AsyncLeaseStore> asyncStores,
        ObjectProvider<LeaseStore> stores, ObjectProvider<IdemListener> listeners) {
      AsyncLeaseStore store = asyncStore(asyncStores, stores.getIfAvailable());
      if (store == null) {
        throw new IdemUnsupportedException("the idempotency store of this reactive web application ("
            + IdemSettings.describe(stores.getIfAvailable()) + ") blocks its caller's thread, and on WebFlux that is an event loop",
            "set idem.store=memory (keys in this instance's memory, one instance only), idem.store=r2dbc (with"
                + " dev.idem:idem-r2dbc and an R2DBC ConnectionFactory), idem.store=redis with"
                + " spring-boot-starter-data-redis-reactive (Lettuce), or define an AsyncLeaseStore bean;"
                + " " + WEBFLUX_SUPPORTED);
      }
      AsyncLeaseIdempotency.Builder builder = AsyncLeaseIdempotency.builder(store)
          .listener(listeners.getIfUnique(() -> IdemListener.NONE))
          .inProgress(IdemSettings.inProgressPolicy(p));
      configured("idem.lease", () -> builder.lease(p.getLease()));
      configured("idem.retention", () -> builder.retention(p.getRetention()));
      AsyncLeaseIdempotency engine = configured("idem.retention", builder::build);
      LOG.info("Idem: lease mode on WebFlux, without blocking; keys in {}",
          store instanceof LeaseStore blocking ? IdemSettings.describe(blocking) : store.getClass().getName());
      return engine;
    }

    /**
     * The WebFlux filter's configuration, a bean as the servlet filter's is, so that what reads
     * the routes (the OpenAPI document) reads the filter's own: the routes of {@code
     * idem.required-key-routes} and {@code idem.optional-key-routes} (default {@code POST /**} and
     * {@code PATCH /**}, key optional), {@code idem.max-body-size}, {@code idem.max-response-size},
     * {@code idem.max-retry-after}, {@code idem.problem-type-base} and {@code
     * idem.anonymous-principal}. The principal is the exchange's ({@code
     * ServerWebExchange.getPrincipal()}, which Spring Security for WebFlux sets), or one scope for
     * every caller with {@code idem.principal=shared}. Not made beside the application's own
     * configuration or its own filter.
     *
     * @throws IdemConfigurationException if a property is invalid, or {@code idem.principal} is
     *     {@code auto} or {@code spring-security} without Spring Security, or {@code servlet}
     * @throws IdemUnsupportedException if {@code idem.routes.*} policies are configured
     */
    @Bean
    @ConditionalOnMissingBean({IdempotencyWebFilterConfig.class, IdempotencyWebFilter.class})
    IdempotencyWebFilterConfig idemWebFilterConfig(IdemProperties p, ObjectProvider<TransactionalEngine> transactional,
        ObjectProvider<AsyncLeaseIdempotency> lease, ResourceLoader resources) {
      if (!p.getRoutes().isEmpty()) {
        throw new IdemUnsupportedException("idem.routes.* gives routes policies of their own (a mode, a store, a retention),"
            + " which the WebFlux filter does not run yet", WEBFLUX_SUPPORTED);
      }
      TransactionalEngine inTransaction = transactional.getIfAvailable();
      IdempotencyWebFilterConfig.Builder b = inTransaction != null
          ? IdempotencyWebFilterConfig.builder(inTransaction)
          : IdempotencyWebFilterConfig.builder(lease.getObject());
      for (String route : p.getRequiredKeyRoutes()) {
        String[] parts = IdemSettings.route("idem.required-key-routes", route);
        configured("idem.required-key-routes", () -> b.requireKey(parts[0], parts[1]));
      }
      for (String route : p.getOptionalKeyRoutes()) {
        String[] parts = IdemSettings.route("idem.optional-key-routes", route);
        configured("idem.optional-key-routes", () -> b.optionalKey(parts[0], parts[1]));
      }
      long bytes = p.getMaxBodySize().toBytes();
      if (bytes > Integer.MAX_VALUE) {
        throw new IdemConfigurationException("idem.max-body-size", "must be at most 256MB, was " + p.getMaxBodySize(), null);
      }
      configured("idem.max-body-size", () -> b.maxBodyBytes((int) bytes));
      b.maxResponseBytes(IdemSettings.maxResponseBytes(p));
      configured("idem.max-retry-after", () -> b.maxRetryAfter(p.getMaxRetryAfter()));
      configured("idem.problem-type-base", () -> problemTypeBase(b, p.getProblemTypeBase()));
      configured("idem.anonymous-principal", () -> b.anonymousPrincipal(p.getAnonymousPrincipal()));
      String principal = principals(p, b, resources.getClassLoader());
      IdempotencyWebFilterConfig config = configured("idem.required-key-routes", b::build);
      LOG.info("Idem: WebFlux filter in {} mode; principal from {}; routes {}; other requests pass through",
          inTransaction != null ? "transactional" : "lease", principal, config.routes());
      return config;
    }

    /**
     * @return the refusal of {@code idem.*} route settings that an application's own {@link
     *     IdempotencyWebFilterConfig} or {@link IdempotencyWebFilter} would leave unread, and of an own
     *     filter beside the starter's
     */
    @Bean
    static OwnFilterConfigurationCheck idemOwnWebFilterConfigurationCheck(ConfigurableListableBeanFactory beans, IdemProperties p) {
      return new OwnFilterConfigurationCheck(beans, p, new OwnFilterConfigurationCheck.Stack(IdempotencyWebFilterConfig.class,
          "IdempotencyWebFilter", "idemWebFilterConfig", IdemReactiveWebAutoConfiguration.class,
          "declare it as @Bean IdempotencyWebFilter", factory -> {
            List<Map.Entry<String, Object>> found = new ArrayList<>();
            for (String name : factory.getBeanNamesForType(IdempotencyWebFilter.class, true, false)) {
              found.add(Map.entry(name, factory.getBean(name)));
            }
            return OwnFilterConfigurationCheck.distinct(found, f -> ((IdempotencyWebFilter) f).config());
          }, () -> false));
    }

    /**
     * @param config the filter's configuration ({@link #idemWebFilterConfig}, or the application's own)
     * @return the WebFlux filter on it
     */
    @Bean
    @ConditionalOnMissingBean
    IdempotencyWebFilter idempotencyWebFilter(IdempotencyWebFilterConfig config) {
      return new IdempotencyWebFilter(config);
    }

    /** {@code idem.principal} on the builder; @return the choice in words */
    private static String principals(IdemProperties p, IdempotencyWebFilterConfig.Builder b, @Nullable ClassLoader classes) {
      IdemProperties.PrincipalSource source = IdemPrincipals.source(p);
      switch (source) {
        case SHARED:
          b.principals(exchange -> Mono.empty());
          return "nowhere: one scope for every caller (idem.principal=shared)";
        case SERVLET:
          throw new IdemConfigurationException("idem.principal", "is servlet, the servlet container's user, which a WebFlux"
              + " application does not have; use spring-security (Spring Security for WebFlux) or shared", null);
        default: // AUTO, SPRING_SECURITY: the exchange's principal, which Spring Security for WebFlux sets
          // the application's class loader, as @ConditionalOnClass reads it
          if (!ClassUtils.isPresent("org.springframework.security.core.Authentication", classes)) {
            if (source == IdemProperties.PrincipalSource.AUTO) {
              throw new IdemConfigurationException("idem.principal", "is auto, and there is no principal source for the WebFlux"
                  + " Idempotency-Key filter (Spring Security is not on the class path). Without one, every caller would share one"
                  + " scope, and one caller's retry could receive another caller's stored answer. To fix it, " + WEBFLUX_CHOICES, null);
            }
            throw IdemPrincipals.unavailable(source);
          }
          return "the exchange's principal (Spring Security)";
      }
    }

    /** {@code about:blank} leaves the type out; anything else must be a valid base. */
    private static IdempotencyWebFilterConfig.Builder problemTypeBase(IdempotencyWebFilterConfig.Builder b, URI base) {
      if (base == null) {
        throw new IllegalArgumentException("must be an absolute URI ending in '/' (or ':' for a URN), or about:blank to leave the problem type out");
      }
      if (base.toString().equalsIgnoreCase("about:blank")) {
        return b.aboutBlankProblemTypes();
      }
      return b.problemTypeBase(base);
    }

    /**
     * The store of the WebFlux filter: the application's {@link AsyncLeaseStore} bean or the R2DBC
     * one, else the {@link LeaseStore} bean when it does not block. The starter's in-memory {@code
     * LeaseStore} (for blocking callers) is an {@code AsyncLeaseStore} too, and is not counted as one
     * of the application's: beside it, an {@code AsyncLeaseStore} bean is the filter's.
     *
     * @return the store, or {@code null} when there is only a blocking one
     * @throws IdemConfigurationException if there are several AsyncLeaseStore beans and none is primary
     */
    private static @Nullable AsyncLeaseStore asyncStore(ObjectProvider<AsyncLeaseStore> asyncStores, @Nullable LeaseStore leaseStore) {
      AsyncLeaseStore fallback = nonBlocking(leaseStore);
      java.util.List<AsyncLeaseStore> own = asyncStores.orderedStream()
          .filter(s -> s != fallback && s != leaseStore).toList();
      if (own.isEmpty()) {
        return fallback;
      }
      if (own.size() == 1) {
        return own.get(0);
      }
      AsyncLeaseStore primary = asyncStores.getIfUnique();
      if (primary == null || primary == fallback) {
        throw new IdemConfigurationException("idem.store", "the application has several AsyncLeaseStore beans ("
            + own.size() + "), none @Primary: mark the one that keeps the WebFlux filter's keys @Primary", null);
      }
      return primary;
    }

    /** @return whether the application has an R2DBC ConnectionFactory bean (r2dbc-spi on the class path) */
    private static boolean hasConnectionFactory(org.springframework.beans.factory.config.ConfigurableListableBeanFactory beanFactory) {
      ClassLoader classes = beanFactory.getBeanClassLoader();
      return ClassUtils.isPresent("io.r2dbc.spi.ConnectionFactory", classes) && beanFactory.getBeanNamesForType(
          ClassUtils.resolveClassName("io.r2dbc.spi.ConnectionFactory", classes), true, false).length > 0;
    }

    /**
     * @return whether the configuration runs transactional mode on R2DBC: {@code idem.mode} {@code
     *     auto} or {@code transactional}, {@code idem.store} {@code auto} or {@code r2dbc},
     *     idem-r2dbc and spring-r2dbc on the class path, and an R2DBC ConnectionFactory bean (as
     *     {@link R2dbcTransactionalConfiguration}'s conditions say)
     */
    static boolean transactionalOnR2dbc(Environment environment,
        org.springframework.beans.factory.config.ConfigurableListableBeanFactory beanFactory) {
      String mode = environment.getProperty("idem.mode", "auto").trim().toLowerCase(Locale.ROOT);
      String store = environment.getProperty("idem.store", "auto").trim().toLowerCase(Locale.ROOT);
      if (!(mode.equals("auto") || mode.equals("transactional")) || !(store.equals("auto") || store.equals("r2dbc"))) {
        return false;
      }
      ClassLoader classes = beanFactory.getBeanClassLoader();
      for (String required : R2DBC_TRANSACTIONAL_CLASSES) {
        if (!ClassUtils.isPresent(required, classes)) {
          return false;
        }
      }
      return beanFactory.getBeanNamesForType(ClassUtils.resolveClassName("io.r2dbc.spi.ConnectionFactory", classes), true, false)
          .length > 0;
    }

    /** @return {@code store} (behind Idem's timing decorator, if any) when it does not block, else {@code null} */
    private static AsyncLeaseStore nonBlocking(LeaseStore store) {
      LeaseStore s = store instanceof TimedLeaseStore timed ? timed.delegate() : store;
      return s instanceof AsyncLeaseStore async ? async : null;
    }
  }

  /**
   * The R2DBC key table for the WebFlux filter: with idem-webflux, idem-r2dbc and an R2DBC {@code
   * ConnectionFactory} (Spring Boot's, from {@code spring.r2dbc.*}), and {@code idem.store} {@code
   * r2dbc} or {@code auto}, an {@link R2dbcLeaseStore} on {@code idem.table}, {@code
   * idem.create-schema} and {@code idem.protection.*}: the table and rows of the JDBC lease store, so
   * either replays the other's keys. The application's own {@link AsyncLeaseStore} bean replaces it.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"dev.idem.webflux.IdempotencyWebFilter", "dev.idem.r2dbc.R2dbcLeaseStore", "io.r2dbc.spi.ConnectionFactory"})
  @ConditionalOnBean(type = "io.r2dbc.spi.ConnectionFactory")
  @ConditionalOnExpression("#{'${idem.store:auto}'.trim().toLowerCase() matches 'auto|r2dbc'}")
  static class R2dbcStoreConfiguration {

    /**
     * @return the R2DBC lease store on the application's ConnectionFactory
     * @throws IdemConfigurationException if there are several ConnectionFactory beans and none is
     *     primary, or {@code idem.table} is not a plain SQL identifier, or the database is neither
     *     PostgreSQL nor MariaDB/MySQL
     */
    @Bean
    @ConditionalOnMissingBean(AsyncLeaseStore.class)
    AsyncLeaseStore idemR2dbcLeaseStore(IdemProperties p, ObjectProvider<ConnectionFactory> factories) {
      ConnectionFactory factory = factories.getIfUnique();
      if (factory == null) {
        throw new IdemConfigurationException("idem.store", "is " + p.getStore().name().toLowerCase(Locale.ROOT)
            + ", and the application has several R2DBC ConnectionFactory beans, none @Primary: mark the one for the keys"
            + " @Primary, or define an AsyncLeaseStore bean", null);
      }
      R2dbcLeaseStore store = configured("idem.table", () -> R2dbcLeaseStore.builder(factory).table(p.getTable())
          .createSchema(p.isCreateSchema()).responseProtection(p.getProtection().build()).build());
      LOG.info("Idem: the WebFlux filter keeps its keys in {}", store);
      return store;
    }
  }

  /**
   * Transactional mode on WebFlux: with idem-webflux, idem-r2dbc, Spring's R2DBC support and an
   * R2DBC {@code ConnectionFactory} (Spring Boot's, from {@code spring.r2dbc.*}), and {@code
   * idem.mode} {@code auto} or {@code transactional} with {@code idem.store} {@code auto} or {@code
   * r2dbc}: an {@link R2dbcTransactionalIdempotency} on {@code idem.table}, {@code idem.retention},
   * {@code idem.create-schema}, {@code idem.protection.*}, {@code idem.in-progress} and {@code
   * idem.max-wait} (a duplicate of a running request gets 409 at once, or waits for its commit and
   * gets the replay), run in the application's reactive
   * transactions ({@link SpringR2dbcTransactions}), so that the handlers' writes through {@code
   * DatabaseClient} or Spring Data R2DBC repositories commit with the key and its stored answer.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"dev.idem.webflux.IdempotencyWebFilter", "dev.idem.r2dbc.R2dbcTransactionalIdempotency",
      "io.r2dbc.spi.ConnectionFactory", "org.springframework.r2dbc.connection.R2dbcTransactionManager"})
  @ConditionalOnBean(type = "io.r2dbc.spi.ConnectionFactory")
  @ConditionalOnExpression("#{'${idem.mode:auto}'.trim().toLowerCase() matches 'auto|transactional'"
      + " and '${idem.store:auto}'.trim().toLowerCase() matches 'auto|r2dbc'}")
  static class R2dbcTransactionalConfiguration {

    /**
     * @return the transactional engine on the application's ConnectionFactory
     * @throws IdemConfigurationException if there are several ConnectionFactory beans and none is
     *     primary, or a property is invalid, or the database is neither PostgreSQL nor MariaDB/MySQL
     */
    @Bean
    @ConditionalOnMissingBean
    R2dbcTransactionalIdempotency idemR2dbcTransactionalIdempotency(IdemProperties p, ObjectProvider<ConnectionFactory> factories,
        ObjectProvider<IdemListener> listeners) {
      ConnectionFactory factory = uniqueFactory(p, factories);
      R2dbcTransactionalIdempotency.Builder builder = R2dbcTransactionalIdempotency.builder(factory)
          .listener(listeners.getIfUnique(() -> IdemListener.NONE))
          .inProgress(IdemSettings.inProgressPolicy(p))
          .responseProtection(p.getProtection().build());
      configured("idem.table", () -> builder.table(p.getTable()));
      configured("idem.retention", () -> builder.retention(p.getRetention()));
      builder.createSchema(p.isCreateSchema());
      R2dbcTransactionalIdempotency engine = configured("idem.table", builder::build);
      if (p.isCreateSchema()) {
        // at start-up, on this (non-event-loop) thread, as the JDBC engines do: the first request does not pay for it
        try {
          engine.createSchema().block(Duration.ofSeconds(30));
        } catch (RuntimeException e) {
          LOG.warn("Idem: the key table {} could not be created at start-up ({}); the first request tries again",
              engine.table(), e.getMessage());
        }
      }
      LOG.info("Idem: transactional mode on WebFlux, without blocking: the handlers' R2DBC writes and the keys commit"
          + " together in {}", engine);
      return engine;
    }

    /**
     * @return the filter's transactional engine: {@code engine} in the application's reactive
     *     transactions (its {@code ReactiveTransactionManager}, else an {@code
     *     R2dbcTransactionManager} on the same ConnectionFactory)
     */
    @Bean
    @ConditionalOnMissingBean
    TransactionalEngine idemTransactionalEngine(IdemProperties p, R2dbcTransactionalIdempotency engine,
        ObjectProvider<ConnectionFactory> factories, ObjectProvider<ReactiveTransactionManager> managers,
        org.springframework.beans.factory.ListableBeanFactory beans) {
      ConnectionFactory factory = uniqueFactory(p, factories);
      ReactiveTransactionManager manager = managers.getIfUnique(() -> new R2dbcTransactionManager(factory));
      checkManages(p, beans, manager, factory);
      R2dbcTransactions transactions = new SpringR2dbcTransactions(manager, factory);
      return TransactionalEngine.of((request, handler) -> engine.execute(transactions, request, connection -> handler),
          engine.listener(), engine.retention());
    }

    /**
     * The filter's transactions must be those of the keys' ConnectionFactory: the key's record is
     * written on the connection bound to that factory, which a manager of another factory does not
     * bind, so the claim, the handler's writes and the stored answer would not commit together.
     * Refused, as the servlet stack refuses a transaction manager of another DataSource.
     *
     * @throws IdemConfigurationException if {@code manager} runs its transactions on another
     *     ConnectionFactory, or does not say on which one and {@code idem.mode} is {@code auto}
     */
    private static void checkManages(IdemProperties p, org.springframework.beans.factory.ListableBeanFactory beans,
        ReactiveTransactionManager manager, ConnectionFactory factory) {
      String name = "(unnamed)";
      for (String candidate : beans.getBeanNamesForType(ReactiveTransactionManager.class, true, false)) {
        if (beans.getBean(candidate) == manager) {
          name = candidate;
        }
      }
      if (manager instanceof R2dbcTransactionManager r2dbc) {
        ConnectionFactory managed = r2dbc.getConnectionFactory();
        if (managed != null && unwrap(managed) != unwrap(factory)) {
          throw new IdemConfigurationException("idem.mode", "transactional mode needs the key table and the handler's writes in"
              + " one transaction, but the transaction manager '" + name + "' (R2dbcTransactionManager) runs its transactions on"
              + " another ConnectionFactory than the one of the keys (" + factory + "): a request's writes would commit apart"
              + " from its key. Mark the ConnectionFactory of the handlers' writes @Primary and give it the transaction manager,"
              + " or set idem.mode=lease", null);
        }
        return;
      }
      if (p.getMode() != IdemProperties.Mode.TRANSACTIONAL) {
        throw new IdemConfigurationException("idem.mode", "is auto, and the reactive transaction manager '" + name + "' ("
            + manager.getClass().getName() + ") does not say which ConnectionFactory it manages, so Idem cannot tell whether"
            + " the key table in " + factory + " commits with the handler's writes. Set idem.mode=transactional if it does,"
            + " or idem.mode=lease", null);
      }
    }

    /** @return the factory that {@code factory} delegates to, through Spring's delegating factories */
    private static ConnectionFactory unwrap(ConnectionFactory factory) {
      ConnectionFactory current = factory;
      for (int i = 0; i < 16 && current instanceof org.springframework.r2dbc.connection.DelegatingConnectionFactory delegating; i++) {
        current = delegating.getTargetConnectionFactory();
      }
      return current;
    }

    private static ConnectionFactory uniqueFactory(IdemProperties p, ObjectProvider<ConnectionFactory> factories) {
      ConnectionFactory factory = factories.getIfUnique();
      if (factory == null) {
        throw new IdemConfigurationException("idem.mode", "is " + p.getMode().name().toLowerCase(Locale.ROOT)
            + ", and the application has several R2DBC ConnectionFactory beans, none @Primary: mark the one of the handlers'"
            + " writes and the keys @Primary, or set idem.mode=lease with an AsyncLeaseStore bean", null);
      }
      return factory;
    }
  }
}
