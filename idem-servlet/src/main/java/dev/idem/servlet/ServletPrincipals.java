package dev.idem.servlet;

import dev.idem.core.spi.PrincipalResolver;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import org.jspecify.annotations.Nullable;

/**
 * The servlet stack's {@link PrincipalResolver}s: the filter and its key status endpoint call a
 * {@code PrincipalResolver<? super HttpServletRequest>} with the request (never its body). Stateless.
 */
public final class ServletPrincipals {

  private static final PrincipalResolver<HttpServletRequest> USER_PRINCIPAL = ServletPrincipals::userName;

  private ServletPrincipals() {}

  /**
   * The filter's default: the container's authenticated user, {@link
   * HttpServletRequest#getUserPrincipal()} and its {@link Principal#getName()}; anonymous when there
   * is none.
   *
   * @return a stateless, thread-safe resolver
   */
  public static PrincipalResolver<HttpServletRequest> userPrincipal() {
    return USER_PRINCIPAL;
  }

  private static @Nullable String userName(HttpServletRequest request) {
    Principal user = request.getUserPrincipal();
    return user == null ? null : user.getName();
  }
}
