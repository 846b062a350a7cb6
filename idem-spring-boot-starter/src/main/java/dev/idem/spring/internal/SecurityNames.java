package dev.idem.spring.internal;

import org.jspecify.annotations.Nullable;
import org.springframework.security.authentication.AuthenticationTrustResolver;
import org.springframework.security.authentication.AuthenticationTrustResolverImpl;
import org.springframework.security.core.Authentication;

/**
 * The rule of the {@code spring-security} principal source: the caller is {@link
 * Authentication#getName()} of an authenticated authentication; none, one not authenticated and an
 * anonymous one ({@code AnonymousAuthenticationToken}) are anonymous. Loaded only when Spring
 * Security is on the class path. Stateless and thread-safe.
 */
public final class SecurityNames {

  private static final AuthenticationTrustResolver TRUST = new AuthenticationTrustResolverImpl();

  private SecurityNames() {}

  /**
   * @param authentication an authentication, or {@code null}
   * @return its name when it is authenticated and not anonymous, else {@code null} (anonymous)
   */
  public static @Nullable String nameOf(@Nullable Authentication authentication) {
    if (authentication == null || !authentication.isAuthenticated() || TRUST.isAnonymous(authentication)) {
      return null;
    }
    String name = authentication.getName();
    return name == null || name.isEmpty() ? null : name;
  }
}
