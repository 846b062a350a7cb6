package dev.idem.spring.principal;

import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.PrincipalIntegration;
import org.springframework.security.authentication.AuthenticationTrustResolver;
import org.springframework.security.authentication.AuthenticationTrustResolverImpl;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;

/**
 * The caller is Spring Security's authenticated user: {@link Authentication#getName()} of the
 * {@link SecurityContextHolder}'s authentication on the current thread. No authentication, one
 * that is not authenticated, and an anonymous one ({@code AnonymousAuthenticationToken}) are
 * anonymous. Loaded only when Spring Security is on the class path. Stateless and thread-safe.
 */
final class SpringSecurityPrincipals implements PrincipalIntegration {

  private final AuthenticationTrustResolver trust = new AuthenticationTrustResolverImpl();

  @Override
  public IdemProperties.PrincipalSource kind() {
    return IdemProperties.PrincipalSource.SPRING_SECURITY;
  }

  @Override
  public String currentPrincipal() {
    Authentication authentication = SecurityContextHolder.getContext().getAuthentication();
    if (authentication == null || !authentication.isAuthenticated() || trust.isAnonymous(authentication)) {
      return null;
    }
    String name = authentication.getName();
    return name == null || name.isEmpty() ? null : name;
  }

  @Override
  public String toString() {
    return "Spring Security's authenticated user";
  }
}
