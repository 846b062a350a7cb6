package dev.idem.spring.internal;

import dev.idem.spring.IdemProperties;

/**
 * A source of the caller's name that an optional integration contributes (Spring Security, the
 * servlet request), registered as a bean only when that integration is on the class path; see
 * {@link IdemPrincipals}. Implementations are stateless and thread-safe.
 */
public interface PrincipalIntegration {

  /** @return the value of {@code idem.principal} that names this source, never {@code null} */
  IdemProperties.PrincipalSource kind();

  /** @return the current caller's name, or {@code null} for an anonymous caller */
  String currentPrincipal();
}
