package dev.idem.spring.principal;

import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.PrincipalIntegration;
import dev.idem.spring.internal.SecurityNames;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;

/**
 * The caller is Spring Security's authenticated user: {@link Authentication#getName()} of the
 * {@link SecurityContextHolder}'s authentication on the current thread. No authentication, one
 * that is not authenticated, and an anonymous one ({@code AnonymousAuthenticationToken}) are
 * anonymous. Loaded only when Spring Security is on the class path. Stateless and thread-safe.
 */
final class SpringSecurityPrincipals implements PrincipalIntegration {

  @Override
  public IdemProperties.PrincipalSource kind() {
    return IdemProperties.PrincipalSource.SPRING_SECURITY;
  }

  @Override
  public String currentPrincipal() {
    return SecurityNames.nameOf(SecurityContextHolder.getContext().getAuthentication());
  }

  @Override
  public String toString() {
    return "Spring Security's authenticated user";
  }
}
