package dev.idem.spring.web;

import static dev.idem.spring.internal.IdemSettings.configured;
import static dev.idem.spring.internal.IdemSettings.maxResponseBytes;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.spi.LeaseStore;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.servlet.OperationNamer;
import dev.idem.servlet.ProblemRenderer;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.IdemStoreDecorator;
import dev.idem.spring.IdempotencyPolicy;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.FilterPrincipals;
import dev.idem.spring.internal.IdemPrincipals;
import dev.idem.spring.internal.IdemSettings;
import dev.idem.spring.internal.KeyStatusReaders;
import dev.idem.spring.internal.ModeDecision;
import dev.idem.spring.internal.ModeDecisions;
import dev.idem.spring.internal.PolicyEngines;
import dev.idem.spring.internal.PrincipalIntegration;
import dev.idem.spring.internal.RedisStores;
import dev.idem.spring.internal.RequestKeys;
import dev.idem.spring.observation.IdemMetricsAutoConfiguration;
import dev.idem.spring.transaction.IdemTransactionalAutoConfiguration;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * The {@link IdempotencyFilter} on Spring MVC: its configuration from the properties, in the mode
 * of the {@link ModeDecision} ({@link IdemTransactionalAutoConfiguration}), with the one start-up log
 * line {@code Idem: <mode> mode (...)}; on a servlet web application its registration, {@link
 * IdemHandlerExceptionResolver}, which answers the refusals of {@link Idempotent} methods in Spring
 * MVC as the filter's problem details, and {@link IdemRouteCheck}, which warns of a configured route
 * that matches no handler. Only with the Servlet API on the class path.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemMetricsAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = "jakarta.servlet.Filter")
public class IdemWebAutoConfiguration {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  /** The filter's configuration, from the properties. */
  @Bean
  @ConditionalOnMissingBean
  IdempotencyFilterConfig idemFilterConfig(
      IdemProperties p,
      ObjectProvider<LeaseIdempotency> leaseEngine,
      ObjectProvider<ModeDecision> modeDecision,
      ObjectProvider<LeaseStore> store,
      ObjectProvider<PrincipalResolver<HttpServletRequest>> filterPrincipals,
      ObjectProvider<PrincipalResolver<Object>> methodPrincipals,
      ObjectProvider<PrincipalIntegration> integrations,
      ObjectProvider<ProblemRenderer> problemRenderer,
      ObjectProvider<IdemListener> listeners,
      ObjectProvider<DataSource> dataSource,
      ObjectProvider<RedisStores> redis,
      ObjectProvider<IdemStoreDecorator> decorators,
      ObjectProvider<PolicyEngines.TransactionalEngines> transactionalEngines,
      ObjectProvider<HandlerPolicySource> handlerPolicies,
      ObjectProvider<OperationNamer> operationNamer,
      ObjectProvider<KeyStatusReader> ownReaders) {
    // A ModeDecision bean exists exactly when spring-jdbc and spring-tx are on the class path.
    ModeDecision decided = modeDecision.getIfAvailable();
    ModeDecision mode = decided != null ? decided : ModeDecisions.withoutSpringJdbc(p);
    IdempotencyEngine engine = mode.engine != null ? mode.engine : leaseEngine.getObject();
    IdempotencyFilterConfig.Builder b = IdempotencyFilterConfig.builder(engine);
    // Routes with a policy of their own first (properties and handler annotations), the most
    // specific first: first match wins.
    List<RoutePolicies.Spec> specs = new ArrayList<>(RoutePolicies.fromProperties(p));
    HandlerPolicySource annotated = handlerPolicies.getIfAvailable();
    if (annotated != null) {
      specs.addAll(annotated.specs());
    }
    specs = RoutePolicies.mostSpecificFirst(specs);
    List<String> policyLines = new ArrayList<>();
    if (!specs.isEmpty()) {
      RoutePolicies policies = new RoutePolicies(new PolicyEngines(p, mode, store.getObject(),
          PolicyEngines.stores(p, "idem.routes.*.store", dataSource.getIfAvailable(), redis.getIfAvailable(),
              decorators.orderedStream().toList()),
          transactionalEngines.getIfAvailable(), listeners.getIfUnique(() -> IdemListener.NONE)));
      for (RoutePolicies.Spec spec : specs) {
        IdempotencyFilterConfig.Route route = policies.route(spec);
        configured(spec.source(), () -> b.route(route));
        policyLines.add(route + " [" + spec.source() + "]");
      }
    }
    for (String route : p.getRequiredKeyRoutes()) {
      String[] parts = IdemSettings.route("idem.required-key-routes", route);
      configured("idem.required-key-routes", () -> b.route(parts[0], parts[1], KeyRequirement.REQUIRED));
    }
    for (String route : p.getOptionalKeyRoutes()) {
      String[] parts = IdemSettings.route("idem.optional-key-routes", route);
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
    b.listener(listeners.getIfUnique(() -> IdemListener.NONE)); // the filter's own refusals, beside the engines'
    PrincipalResolver<HttpServletRequest> filterBean = filterPrincipals.getIfAvailable();
    PrincipalResolver<Object> methodBean = methodPrincipals.getIfAvailable();
    List<PrincipalIntegration> sources = integrations.orderedStream().toList();
    b.principalResolver(FilterPrincipals.choose(p, filterBean, methodBean, sources));
    String naming = operationNames(p, b, operationNamer.getIfAvailable(), ownReaders, mode, store, dataSource);
    IdempotencyFilterConfig config = configured("idem.required-key-routes", b::build);
    LOG.info("Idem: {} mode ({}); keys in {}; principal from {}",
        mode.mode.name().toLowerCase(Locale.ROOT), mode.reason,
        mode.mode == IdemProperties.Mode.TRANSACTIONAL ? "table " + p.getTable() + " of that DataSource" : describe(store.getIfAvailable()),
        FilterPrincipals.describe(p, filterBean, methodBean, sources));
    for (String line : policyLines) {
      LOG.info("Idem: route {}", line);
    }
    List<String> plain = config.routes().stream().filter(r -> r.policy().isEmpty()).map(Object::toString).toList();
    if (!plain.isEmpty()) {
      // the routes of idem.required-key-routes and idem.optional-key-routes (with their defaults), on the mode above
      LOG.info("Idem: routes {}; other requests pass through", String.join(", ", plain));
    }
    LOG.info("Idem: operations named after {}", naming);
    return config;
  }

  /**
   * {@code idem.operation-names} and {@code idem.earlier-operation-names} on the builder.
   *
   * @return the choice in words, for the start-up log
   */
  private static String operationNames(IdemProperties p, IdempotencyFilterConfig.Builder b, OperationNamer namer,
      ObjectProvider<KeyStatusReader> ownReaders, ModeDecision mode, ObjectProvider<LeaseStore> store,
      ObjectProvider<DataSource> dataSource) {
    if (p.getOperationNames() == IdemProperties.OperationNames.ROUTE || namer == null) {
      return "the routes' patterns" + (namer == null ? " (no Spring MVC handler mappings)" : " (idem.operation-names=route)");
    }
    if (!p.isEarlierOperationNames()) {
      b.operationNames(namer, null);
      return "the handlers' path patterns (idem.earlier-operation-names=false: keys stored under route names are not looked for)";
    }
    List<KeyStatusReader> readers = ownReaders.orderedStream()
        .filter(r -> !(r instanceof LeaseStore) && !(r instanceof dev.idem.jdbc.JdbcIdempotency)).toList();
    KeyStatusReader earlier;
    try {
      earlier = KeyStatusReaders.reader(readers.size() == 1 ? readers.get(0) : null, mode, store.getIfAvailable(),
          dataSource.getIfUnique());
    } catch (IdemConfigurationException e) {
      // No way to find keys stored under the routes' names: keep those names rather than lose them.
      return "the routes' patterns (the store reads no key statuses, so keys stored under route names could not be"
          + " found under handler names: " + e.getMessage() + ")";
    }
    b.operationNames(namer, earlier);
    return "the handlers' path patterns; a key stored under its route's pattern is still found there"
        + " (idem.earlier-operation-names=false once one retention has passed)";
  }

  /** The routes of {@link IdempotencyPolicy} annotations on handler methods; a bean only with Spring MVC. */
  interface HandlerPolicySource {
    /**
     * @return one spec per request method and path pattern of each annotated handler method
     * @throws IdemConfigurationException for an annotation that cannot be honoured
     */
    List<RoutePolicies.Spec> specs();
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

  /** @return the store in words for the start-up log line */
  static String describe(LeaseStore store) {
    return IdemSettings.describe(store);
  }

  /**
   * @return the refusal of {@code idem.*} route settings that an application's own filter or {@link
   *     IdempotencyFilterConfig} would leave unread, and of an own filter beside the starter's
   */
  @Bean
  static OwnFilterConfigurationCheck idemOwnFilterConfigurationCheck(ConfigurableListableBeanFactory beans, IdemProperties p,
      ObjectProvider<HandlerPolicySource> handlerPolicies) {
    return new OwnFilterConfigurationCheck(beans, p, new OwnFilterConfigurationCheck.Stack(IdempotencyFilterConfig.class,
        "IdempotencyFilter", "idemFilterConfig", IdemWebAutoConfiguration.class,
        "register it with a FilterRegistrationBean named idempotencyFilter", IdemWebAutoConfiguration::idemFilters, () -> {
          HandlerPolicySource annotated = handlerPolicies.getIfAvailable();
          return annotated != null && !annotated.specs().isEmpty();
        }));
  }

  /**
   * @return the {@link IdempotencyFilter}s the servlet container gets, one bean name each (a
   *     registration's, else the filter bean's), with their configurations: registrations that are
   *     enabled and filter beans that no disabled registration holds back (Spring Boot registers a
   *     {@code Filter} bean by itself)
   */
  static Map<String, @Nullable Object> idemFilters(ConfigurableListableBeanFactory beans) {
    List<Map.Entry<String, Object>> found = new ArrayList<>();
    Set<Object> held = Collections.newSetFromMap(new IdentityHashMap<>());
    if (ClassUtils.isPresent(REGISTRATION, IdemWebAutoConfiguration.class.getClassLoader())) {
      Registrations.ofIdempotencyFilter(beans, found, held); // only loaded where Spring Boot's servlet support is
    }
    for (String name : beans.getBeanNamesForType(IdempotencyFilter.class, true, false)) {
      Object filter = beans.getBean(name);
      if (!held.contains(filter)) {
        found.add(Map.entry(name, filter));
      }
    }
    return OwnFilterConfigurationCheck.distinct(found, f -> ((IdempotencyFilter) f).config());
  }

  private static final String REGISTRATION = "org.springframework.boot.web.servlet.FilterRegistrationBean";

  /** The registrations of an {@link IdempotencyFilter}; only loaded with {@code FilterRegistrationBean} present. */
  private static final class Registrations {
    @SuppressWarnings("rawtypes")
    static void ofIdempotencyFilter(ConfigurableListableBeanFactory beans, List<Map.Entry<String, Object>> enabled,
        Set<Object> disabled) {
      for (String name : beans.getBeanNamesForType(FilterRegistrationBean.class, true, false)) {
        FilterRegistrationBean r = beans.getBean(name, FilterRegistrationBean.class);
        if (r.getFilter() instanceof IdempotencyFilter filter) {
          if (r.isEnabled()) {
            enabled.add(Map.entry(name, filter));
          } else {
            disabled.add(filter);
          }
        }
      }
    }
  }

  /** Registers the filter, and Idem's answers for Spring MVC, on a servlet web application. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(name = "org.springframework.boot.web.servlet.FilterRegistrationBean")
  static class FilterRegistrationConfiguration {
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
      /**
       * The key of the request the filter protects on this thread in the key's transaction, for
       * {@link Idempotent} methods it calls. Only a request in transactional mode covers such a
       * call: the call's writes, the request's record and its answer commit or roll back together.
       * In lease mode an answer the response policy does not store (a 5xx) or a failing handler
       * releases the key, and the retry runs the handler again: a call to another system made with
       * the request's key must then find its own record, or it runs twice.
       */
      @Bean
      RequestKeys idemRequestKeys() {
        return () -> {
          if (!(org.springframework.web.context.request.RequestContextHolder.getRequestAttributes()
              instanceof org.springframework.web.context.request.ServletRequestAttributes servlet)) {
            return null;
          }
          Object connection = IdempotencyFilter.connection(servlet.getRequest()).orElse(null);
          return connection == null ? null : IdempotencyFilter.protectedKey(servlet.getRequest())
              .map(key -> new RequestKeys.ProtectedRequest(key, connection)).orElse(null);
        };
      }

      /** Names keys' operations after the Spring MVC handler a request reaches ({@code idem.operation-names}). */
      @Bean
      OperationNamer idemOperationNamer(
          ObjectProvider<org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping> mappings,
          Environment environment) {
        return new SpringMvcOperationNamer(() -> mappings.orderedStream().toList(), environment.getProperty("spring.mvc.servlet.path"));
      }

      /** The {@link IdempotencyPolicy} annotations of the handler methods, read when the filter's configuration is made. */
      @Bean
      HandlerPolicySource idemHandlerPolicies(
          ObjectProvider<org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping> mappings,
          Environment environment) {
        return () -> HandlerPolicies.find(() -> mappings.orderedStream().toList(), environment.getProperty("spring.mvc.servlet.path"));
      }

      @Bean
      @ConditionalOnMissingBean
      IdemHandlerExceptionResolver idemHandlerExceptionResolver(IdempotencyFilterConfig config) {
        return new IdemHandlerExceptionResolver(config);
      }

      /** The WARN line, once the application is ready, for a configured route that matches no handler. */
      @Bean
      IdemRouteCheck idemRouteCheck(IdempotencyFilterConfig config, Environment environment) {
        boolean optionalRoutesSet = Binder.get(environment).bind("idem.optional-key-routes", Bindable.listOf(String.class)).isBound();
        return new IdemRouteCheck(config, optionalRoutesSet, environment.getProperty("spring.mvc.servlet.path"));
      }
    }
  }
}
