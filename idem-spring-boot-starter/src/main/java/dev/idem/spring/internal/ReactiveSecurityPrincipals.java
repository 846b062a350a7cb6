package dev.idem.spring.internal;

import java.util.Optional;
import org.springframework.security.core.context.ReactiveSecurityContextHolder;
import org.springframework.security.core.context.SecurityContext;
import reactor.core.publisher.Mono;

/**
 * Spring Security's caller of a reactive call, by {@link SecurityNames}' rule, read from the
 * subscriber's Reactor context, where Spring Security for WebFlux puts it ({@link
 * ReactiveSecurityContextHolder}). Loaded only when Spring Security and Reactor are on the class
 * path. Stateless and thread-safe.
 */
public final class ReactiveSecurityPrincipals {

  /** The class whose presence says that Spring Security can name the caller of a reactive call. */
  public static final String CONTEXT_HOLDER = "org.springframework.security.core.context.ReactiveSecurityContextHolder";

  private ReactiveSecurityPrincipals() {}

  /**
   * @return a {@code Mono} of the subscriber's caller (empty {@code Optional}: anonymous), or an
   *     empty {@code Mono} when the subscriber's context has no security context at all
   */
  public static Mono<Optional<String>> current() {
    return ReactiveSecurityContextHolder.getContext().map(ReactiveSecurityPrincipals::nameIn);
  }

  private static Optional<String> nameIn(SecurityContext context) {
    return Optional.ofNullable(SecurityNames.nameOf(context.getAuthentication()));
  }
}
