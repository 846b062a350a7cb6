package dev.idem.spring.internal;

import dev.idem.core.spi.PrincipalResolver;
import dev.idem.spring.IdemConfigurationException;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.Idempotent;
import dev.idem.spring.method.IdemMethodAutoConfiguration;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;

/**
 * Chooses where the principal of a key's scope comes from, for {@link Idempotent} methods (and,
 * through {@link FilterPrincipals}, for the filter), so that two callers never share a scope by
 * accident:
 *
 * <ol>
 *   <li>the application's {@code PrincipalResolver<Object>} bean ({@link PrincipalResolver}), if it
 *       defines one: called with the stack's call (the invoked {@link java.lang.reflect.Method} for
 *       {@code @Idempotent} methods, the request for the filter and the key status endpoint, a
 *       {@code dev.idem.grpc.GrpcCall} for gRPC);
 *   <li>otherwise {@code idem.principal}: {@code auto} (the default) is Spring Security's
 *       authenticated user when Spring Security is on the class path, and no source at all
 *       otherwise; {@code spring-security}; {@code servlet} (the container's user of the current
 *       request); {@code shared} (one principal, {@code idem.method-principal}, for every call).
 * </ol>
 *
 * With no source, the application does not start if a bean has {@code @Idempotent} methods
 * ({@link IdemMethodAutoConfiguration}); a call that finds none anyway fails with {@link
 * IdemConfigurationException}. Stateless.
 */
public final class IdemPrincipals {

  /** What an application without a principal source can do; part of every such message. */
  public static final String CHOICES = "add Spring Security (spring-boot-starter-security) to scope keys by the authenticated user,"
      + " define a PrincipalResolver<Object> bean (dev.idem.core.spi.PrincipalResolver), set idem.principal=servlet to use the"
      + " servlet container's user,"
      + " or set idem.principal=shared if the application is single-tenant and any caller may receive any other caller's stored answer";

  private IdemPrincipals() {}

  /**
   * @param properties the bound properties, never {@code null}
   * @param application the application's resolver bean, or {@code null}
   * @param integrations the sources whose libraries are on the class path, never {@code null}
   * @return the resolver of {@code @Idempotent} methods; {@code null} when there is no source
   * @throws IdemConfigurationException if {@code idem.principal} names a source that is not on the
   *     class path, or is {@code null}
   */
  public static @Nullable PrincipalResolver<Object> forMethods(IdemProperties properties, @Nullable PrincipalResolver<Object> application,
      List<PrincipalIntegration> integrations) {
    if (application != null) {
      return application;
    }
    IdemProperties.PrincipalSource source = source(properties);
    switch (source) {
      case SHARED:
        String shared = properties.getMethodPrincipal();
        if (shared == null || shared.isEmpty()) {
          throw new IdemConfigurationException("idem.method-principal", "must not be empty with idem.principal=shared", null);
        }
        return call -> shared;
      case AUTO:
        return find(integrations, IdemProperties.PrincipalSource.SPRING_SECURITY).map(IdemPrincipals::resolver).orElse(null);
      default:
        return resolver(find(integrations, source).orElseThrow(() -> unavailable(source)));
    }
  }

  public static IdemProperties.PrincipalSource source(IdemProperties properties) {
    if (properties.getPrincipal() == null) {
      throw new IdemConfigurationException("idem.principal", "must be auto, spring-security, servlet or shared", null);
    }
    return properties.getPrincipal();
  }

  private static PrincipalResolver<Object> resolver(PrincipalIntegration integration) {
    return call -> integration.currentPrincipal();
  }

  public static Optional<PrincipalIntegration> find(List<PrincipalIntegration> integrations, IdemProperties.PrincipalSource kind) {
    return integrations.stream().filter(i -> i.kind() == kind).findFirst();
  }

  /** {@code idem.principal} names a source whose library is missing. */
  public static IdemConfigurationException unavailable(IdemProperties.PrincipalSource source) {
    return new IdemConfigurationException("idem.principal", source == IdemProperties.PrincipalSource.SPRING_SECURITY
        ? "is spring-security, but Spring Security is not on the class path: add spring-boot-starter-security"
        : "is servlet, but spring-web and the Servlet API are not on the class path", null);
  }

  /**
   * @param what who needs a principal, such as "the @Idempotent methods of bean 'payments'"
   * @return the refusal, naming the property and every way out
   */
  public static IdemConfigurationException noSource(String what) {
    return new IdemConfigurationException("idem.principal", "is auto, and there is no principal source for " + what
        + " (Spring Security is not on the class path and there is no PrincipalResolver<Object> bean). Without one, every caller"
        + " would share one scope, and one caller's retry could receive another caller's stored answer. To fix it, " + CHOICES, null);
  }

  /**
   * @return the name of a bean whose class has an {@code @Idempotent} method (on the class, a
   *     superclass or an interface), if any; beans are not created to find out
   */
  public static Optional<String> beanWithIdempotentMethods(ConfigurableListableBeanFactory beans) {
    return IdempotentMethods.of(beans).stream().map(IdempotentMethods.Found::beanName).findFirst();
  }
}
