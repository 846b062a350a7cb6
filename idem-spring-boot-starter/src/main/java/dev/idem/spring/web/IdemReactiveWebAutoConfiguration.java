package dev.idem.spring.web;

import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemUnsupportedException;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;

/**
 * Refuses to start a reactive web application (Spring WebFlux): the {@code Idempotency-Key} filter
 * runs on the servlet stack only, so on WebFlux no request would be protected, the configured
 * routes would be ignored and a retry would run its handler again. The refusal is a bean factory
 * post-processor, so it happens before any bean is created, with lazy initialisation too. A
 * non-web application (a Kafka or RabbitMQ consumer, {@code spring.main.web-application-type=none})
 * and a servlet one are not concerned.
 */
@AutoConfiguration(after = {IdemAutoConfiguration.class, IdemWebAutoConfiguration.class})
@ConditionalOnBean(IdemAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
public class IdemReactiveWebAutoConfiguration {

  /** What is not protected, part of the refusal. */
  static final String UNSUPPORTED = "this is a reactive web application (Spring WebFlux), and Idem's Idempotency-Key filter"
      + " runs only on the servlet stack: no request would be protected, idem.required-key-routes and idem.optional-key-routes"
      + " would be ignored, and a retry with the same key would run its handler again";

  /** What is supported and the ways out, part of the refusal. */
  static final String SUPPORTED = "Idem supports the servlet stack: Spring MVC (spring-boot-starter-web). To run this"
      + " application without Idem, set idem.enabled=false or exclude the auto-configuration"
      + " (spring.autoconfigure.exclude=dev.idem.spring.IdemAutoConfiguration); if it has Spring MVC as well,"
      + " spring.main.web-application-type=servlet runs it on the servlet stack";

  /** @return a post-processor that stops the start-up with {@link IdemUnsupportedException} */
  @Bean
  static BeanFactoryPostProcessor idemReactiveWebRefusal() {
    return beanFactory -> {
      throw new IdemUnsupportedException(UNSUPPORTED, SUPPORTED);
    };
  }
}
