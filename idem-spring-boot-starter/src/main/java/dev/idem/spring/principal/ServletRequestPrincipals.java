package dev.idem.spring.principal;

import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.PrincipalIntegration;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * The caller is the servlet container's user of the request the current thread serves ({@link
 * RequestContextHolder}, {@link HttpServletRequest#getUserPrincipal()}); outside a request, or
 * without a user, the caller is anonymous. Loaded only when spring-web and the Servlet API are on
 * the class path. Stateless and thread-safe.
 */
final class ServletRequestPrincipals implements PrincipalIntegration {

  @Override
  public IdemProperties.PrincipalSource kind() {
    return IdemProperties.PrincipalSource.SERVLET;
  }

  @Override
  public String currentPrincipal() {
    RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
    if (!(attributes instanceof ServletRequestAttributes servlet)) {
      return null;
    }
    Principal principal = servlet.getRequest().getUserPrincipal();
    return principal == null ? null : principal.getName();
  }

  @Override
  public String toString() {
    return "the servlet container's user";
  }
}
