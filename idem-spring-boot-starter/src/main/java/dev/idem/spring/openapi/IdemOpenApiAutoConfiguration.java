package dev.idem.spring.openapi;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.outbox.IdemOutboxAutoConfiguration;
import dev.idem.spring.web.IdemReactiveWebAutoConfiguration;
import dev.idem.spring.web.IdemWebAutoConfiguration;
import dev.idem.webflux.IdempotencyWebFilterConfig;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * {@link IdemOpenApi}, which puts Idem's header, problems and expiry policy into the application's
 * OpenAPI document, only with springdoc-openapi on the class path and a filter configured: on a
 * servlet web application (Spring MVC) from the servlet filter's {@link IdempotencyFilterConfig},
 * on a reactive one (WebFlux) from the WebFlux filter's {@code IdempotencyWebFilterConfig}. The
 * same description either way; each stack documents its own filter's routes only, even when the
 * other stack's classes are on the class path too.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemWebAutoConfiguration.class,
    IdemReactiveWebAutoConfiguration.class, IdemOutboxAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springdoc.core.customizers.OpenApiCustomizer", "io.swagger.v3.oas.models.OpenAPI"})
public class IdemOpenApiAutoConfiguration {

  /** Spring MVC: the servlet filter's routes, behind {@code spring.mvc.servlet.path}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  static class ServletFilterDocument {

    /** @return the description of the servlet filter's routes */
    @Bean
    @ConditionalOnBean(IdempotencyFilterConfig.class)
    IdemOpenApi idemOpenApi(IdempotencyFilterConfig filter, IdemProperties p, Environment environment) {
      return new IdemOpenApi(IdemOpenApi.routes(filter), p.getRetention(), environment.getProperty("spring.mvc.servlet.path"));
    }
  }

  /**
   * WebFlux: the WebFlux filter's routes. They match the path within the application, and
   * springdoc's paths leave {@code spring.webflux.base-path} out too, so no prefix.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  @ConditionalOnClass(name = "dev.idem.webflux.IdempotencyWebFilterConfig")
  static class WebFluxFilterDocument {

    /** @return the description of the WebFlux filter's routes */
    @Bean
    @ConditionalOnBean(type = "dev.idem.webflux.IdempotencyWebFilterConfig")
    IdemOpenApi idemOpenApi(IdempotencyWebFilterConfig filter, IdemProperties p) {
      return new IdemOpenApi(new WebFluxRoutes(filter), p.getRetention(), null);
    }
  }
}
