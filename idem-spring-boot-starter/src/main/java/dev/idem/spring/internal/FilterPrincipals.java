package dev.idem.spring.internal;

import dev.idem.core.spi.PrincipalResolver;
import dev.idem.servlet.ServletPrincipals;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Chooses the filter's {@link PrincipalResolver}, by the rules of {@link IdemPrincipals}: the
 * application's {@code PrincipalResolver<HttpServletRequest>} bean, else its {@code
 * PrincipalResolver<Object>} bean (called with the request), else
 * {@code idem.principal}: {@code auto} and {@code spring-security} take Spring Security's
 * authenticated user (falling back to {@code getUserPrincipal()} for requests Spring Security
 * does not see), {@code servlet} takes {@code getUserPrincipal()}, {@code shared} makes every caller
 * anonymous. Loaded only with the Servlet API on the class path. Stateless.
 */
public final class FilterPrincipals {

  /** No principal source: the filter's registration refuses to start with it. */
  public static final PrincipalResolver<HttpServletRequest> NONE = new PrincipalResolver<>() {
    @Override
    public String resolve(HttpServletRequest request) {
      throw IdemPrincipals.noSource("the Idempotency-Key filter");
    }

    @Override
    public String toString() {
      return "no principal source";
    }
  };

  private FilterPrincipals() {}

  /**
   * @return the resolver, or {@link #NONE}
   * @throws IdemConfigurationException if {@code idem.principal} names a source that is not on the
   *     class path
   */
  public static PrincipalResolver<? super HttpServletRequest> choose(IdemProperties properties,
      @Nullable PrincipalResolver<HttpServletRequest> filterBean, @Nullable PrincipalResolver<Object> methodBean,
      List<PrincipalIntegration> integrations) {
    if (filterBean != null) {
      return filterBean;
    }
    if (methodBean != null) {
      return methodBean;
    }
    IdemProperties.PrincipalSource source = IdemPrincipals.source(properties);
    switch (source) {
      case SHARED:
        return PrincipalResolver.anonymous();
      case SERVLET:
        return ServletPrincipals.userPrincipal();
      default:
        PrincipalIntegration security = IdemPrincipals.find(integrations, IdemProperties.PrincipalSource.SPRING_SECURITY).orElse(null);
        if (security == null) {
          if (source == IdemProperties.PrincipalSource.AUTO) {
            return NONE;
          }
          throw IdemPrincipals.unavailable(source);
        }
        return (HttpServletRequest request) -> {
          String name = security.currentPrincipal();
          if (name != null) {
            return name;
          }
          Principal user = request.getUserPrincipal();
          return user == null ? null : user.getName();
        };
    }
  }

  /** @return where {@link #choose} takes the principal from, in words for the start-up log line */
  public static String describe(IdemProperties properties, @Nullable PrincipalResolver<HttpServletRequest> filterBean,
      @Nullable PrincipalResolver<Object> methodBean, List<PrincipalIntegration> integrations) {
    if (filterBean != null) {
      return "the application's PrincipalResolver<HttpServletRequest> bean";
    }
    if (methodBean != null) {
      return "the application's PrincipalResolver<Object> bean";
    }
    IdemProperties.PrincipalSource source = IdemPrincipals.source(properties);
    if (source == IdemProperties.PrincipalSource.AUTO) {
      return IdemPrincipals.find(integrations, IdemProperties.PrincipalSource.SPRING_SECURITY).isPresent()
          ? "idem.principal=auto: Spring Security's authenticated user" : "no source";
    }
    return "idem.principal=" + source.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-')
        + (source == IdemProperties.PrincipalSource.SHARED ? " (one scope for every caller)" : "");
  }
}
