package dev.idem.spring.principal;

import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.FilterPrincipals;
import dev.idem.spring.internal.IdemPrincipals;
import dev.idem.spring.internal.PrincipalIntegration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The principal sources whose libraries are on the class path ({@link PrincipalIntegration}), which
 * the filter ({@link FilterPrincipals}) and {@link Idempotent} methods ({@link IdemPrincipals})
 * choose from: Spring Security's authenticated user, and the servlet container's user.
 */
@AutoConfiguration(after = IdemAutoConfiguration.class)
@ConditionalOnBean(IdemAutoConfiguration.class)
public class IdemPrincipalAutoConfiguration {

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
}
