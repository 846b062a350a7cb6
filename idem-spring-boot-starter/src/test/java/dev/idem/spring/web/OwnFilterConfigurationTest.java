package dev.idem.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemAutoConfigurationTest;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.webflux.IdempotencyWebFilter;
import dev.idem.webflux.IdempotencyWebFilterConfig;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * An application that defines its own filter configuration while {@code idem.*} route settings
 * are set does not start. Was: the starter stepped aside for the application's bean and never read
 * the settings, so {@code idem.required-key-routes=POST /orders} left {@code POST /orders} as
 * the bean's routes said (here: not protected at all), without a word.
 */
class OwnFilterConfigurationTest {

  private static IdempotencyFilterConfig ownServletConfig() {
    return IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).route("POST", "/notes", KeyRequirement.REQUIRED)
        .principalResolver(request -> "shared").build();
  }

  private static IdempotencyWebFilterConfig ownWebFluxConfig() {
    return IdempotencyWebFilterConfig.builder(AsyncLeaseIdempotency.builder(new InMemoryLeaseStore()).build())
        .requireKey("POST", "/notes").principals(exchange -> reactor.core.publisher.Mono.just("shared")).build();
  }

  private static IdemUnsupportedException refusal(Throwable failure) {
    return (IdemUnsupportedException) IdemAutoConfigurationTest.causeOf(failure, IdemUnsupportedException.class);
  }

  private final WebApplicationContextRunner servlet = new WebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
      .withPropertyValues("idem.principal=shared", "idem.mode=lease", "idem.store=memory");

  @Test
  void theRouteSettingsWereNotReadBesideTheApplicationsOwnServletConfiguration() {
    servlet.withBean(IdempotencyFilterConfig.class, OwnFilterConfigurationTest::ownServletConfig)
        .withPropertyValues("idem.required-key-routes=POST /orders", "idem.optional-key-routes=PUT /**")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("its own IdempotencyFilter or IdempotencyFilterConfig")
              .hasMessageContaining("idem.required-key-routes, idem.optional-key-routes")
              .hasMessageContaining("remove the application's bean");
        });
  }

  @Test
  void theApplicationsOwnServletConfigurationWithoutRouteSettingsStartsOnIt() {
    servlet.withBean(IdempotencyFilterConfig.class, OwnFilterConfigurationTest::ownServletConfig)
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).routeFor("POST", "/notes")).isNotNull();
        });
  }

  @Test
  void theStartersOwnConfigurationReadsTheRouteSettings() {
    servlet.withPropertyValues("idem.required-key-routes=POST /orders")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(IdempotencyFilterConfig.class).routeFor("POST", "/orders").requirement())
              .isEqualTo(KeyRequirement.REQUIRED);
        });
  }

  private final ReactiveWebApplicationContextRunner reactive = new ReactiveWebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BootLine.withIdem()))
      .withPropertyValues("idem.principal=shared", "idem.mode=lease", "idem.store=memory");

  @Test
  void theRouteSettingsWereNotReadBesideTheApplicationsOwnWebFluxConfigurationOrFilter() {
    reactive.withBean(IdempotencyWebFilterConfig.class, OwnFilterConfigurationTest::ownWebFluxConfig)
        .withPropertyValues("idem.required-key-routes=POST /orders")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("its own IdempotencyWebFilter or IdempotencyWebFilterConfig")
              .hasMessageContaining("idem.required-key-routes");
        });
    reactive.withBean(IdempotencyWebFilter.class, () -> new IdempotencyWebFilter(ownWebFluxConfig()))
        .withPropertyValues("idem.required-key-routes=POST /orders")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("its own IdempotencyWebFilter")
              .hasMessageContaining("idem.required-key-routes");
        });
    reactive.withBean(IdempotencyWebFilterConfig.class, OwnFilterConfigurationTest::ownWebFluxConfig)
        .run(ctx -> assertThat(ctx).hasNotFailed());
  }

  /**
   * An application's own servlet filter registered under another name: the starter's registration
   * ({@code idempotencyFilter}) was added beside it, and both ran on every request.
   */
  @Test
  void anOwnServletFilterRegisteredUnderAnotherNameRanBesideTheStartersFilter() {
    servlet.withBean("ownIdem", FilterRegistrationBean.class,
            () -> new FilterRegistrationBean<>(
                new IdempotencyFilter(ownServletConfig())))
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("2 IdempotencyFilter filters")
              .hasMessageContaining("ownIdem").hasMessageContaining("idempotencyFilter");
        });
    servlet.withBean("ownIdem", jakarta.servlet.Filter.class, () -> new IdempotencyFilter(ownServletConfig()))
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("ownIdem");
        });
  }

  /**
   * The application's own filter, registered under the starter's name with a configuration of its
   * own: the starter's registration steps aside, but it still built its configuration from the
   * settings, which no filter ran.
   */
  @Test
  void anOwnFilterRegisteredAsIdempotencyFilterLeftTheRouteSettingsUnread() {
    servlet.withBean("idempotencyFilter", FilterRegistrationBean.class,
            () -> new FilterRegistrationBean<>(
                new IdempotencyFilter(ownServletConfig())))
        .withPropertyValues("idem.required-key-routes=POST /orders")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("idem.required-key-routes");
        });
  }

  /** A filter bean and its own registration (to set its URL patterns) are one filter, not two. */
  @Test
  void aFilterBeanAndItsRegistrationAreOneFilter() {
    servlet.withUserConfiguration(OwnFilterAndRegistration.class)
        .run(ctx -> assertThat(ctx).hasNotFailed());
    servlet.withUserConfiguration(OwnFilterAndDisabledRegistration.class)
        .run(ctx -> assertThat(ctx).hasNotFailed());
  }

  /** @return a registration of {@code filter}, as an application writes one to set its URL patterns or turn it off */
  private static FilterRegistrationBean<IdempotencyFilter> registration(IdempotencyFilter filter,
      Consumer<FilterRegistrationBean<IdempotencyFilter>> settings) {
    FilterRegistrationBean<IdempotencyFilter> r = new FilterRegistrationBean<>(filter);
    settings.accept(r);
    return r;
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnFilterAndRegistration {
    @Bean
    IdempotencyFilter idemFilter() {
      return new IdempotencyFilter(ownServletConfig());
    }

    @Bean
    FilterRegistrationBean<IdempotencyFilter> idempotencyFilter(IdempotencyFilter idemFilter) {
      return registration(idemFilter, r -> r.addUrlPatterns("/notes/*"));
    }
  }

  /** A filter bean kept out of the container (a security chain runs it instead), beside the starter's. */
  @Configuration(proxyBeanMethods = false)
  static class OwnFilterAndDisabledRegistration {
    @Bean
    IdempotencyFilter idemFilter() {
      return new IdempotencyFilter(ownServletConfig());
    }

    @Bean
    FilterRegistrationBean<IdempotencyFilter> idemFilterOff(IdempotencyFilter idemFilter) {
      return registration(idemFilter, r -> r.setEnabled(false));
    }
  }

  /** Two filters of the application's own, each on routes of its own, without the starter's: left alone. */
  @Test
  void twoOwnWebFiltersOnRoutesOfTheirOwnStart() {
    reactive.withBean("payments", IdempotencyWebFilter.class, () -> new IdempotencyWebFilter(ownWebFluxConfig()))
        .withBean("orders", IdempotencyWebFilter.class, () -> new IdempotencyWebFilter(ownWebFluxConfig()))
        .run(ctx -> assertThat(ctx).hasNotFailed());
  }

  /**
   * An application's filter declared as a plain {@code WebFilter}: the starter's condition could not
   * see its type, so its own filter ran too, both on every request.
   */
  @Test
  void anOwnFilterDeclaredAsAPlainWebFilterRanBesideTheStartersFilter() {
    reactive.withBean("ownFilter", org.springframework.web.server.WebFilter.class,
            () -> new IdempotencyWebFilter(ownWebFluxConfig()))
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(refusal(ctx.getStartupFailure())).hasMessageContaining("2 IdempotencyWebFilter filters")
              .hasMessageContaining("ownFilter").hasMessageContaining("declare it as @Bean IdempotencyWebFilter");
        });
  }
}
