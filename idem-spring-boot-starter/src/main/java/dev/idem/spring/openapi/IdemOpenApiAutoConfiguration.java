package dev.idem.spring.openapi;

import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.outbox.IdemOutboxAutoConfiguration;
import dev.idem.spring.web.IdemWebAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * {@link IdemOpenApi}, which puts Idem's header, problems and expiry policy into the application's
 * OpenAPI document, only with springdoc-openapi on the class path and the filter configured.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemWebAutoConfiguration.class, IdemOutboxAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springdoc.core.customizers.OpenApiCustomizer", "io.swagger.v3.oas.models.OpenAPI"})
public class IdemOpenApiAutoConfiguration {

  @Bean
  @ConditionalOnBean(IdempotencyFilterConfig.class)
  IdemOpenApi idemOpenApi(IdempotencyFilterConfig filter, IdemProperties p, Environment environment) {
    return new IdemOpenApi(filter, p.getRetention(), environment.getProperty("spring.mvc.servlet.path"));
  }
}
