package dev.idem.spring;

import org.jspecify.annotations.Nullable;

/**
 * Supplies the principal of the scope (whose key it is) for {@link Idempotent} methods and, unless
 * the application also defines a {@code dev.idem.servlet.PrincipalResolver} bean, for the
 * Idempotency-Key filter. Define one as a bean to replace the default source, which is Spring
 * Security's authenticated user when Spring Security is on the class path, and otherwise what
 * {@code idem.principal} says (without any source, the application does not start).
 *
 * <p>The answer must come from authentication (a verified user, client or tenant id), never from
 * an argument or a request field the caller controls. {@code null} or an empty string means
 * anonymous: the scope's principal is then {@code idem.anonymous-principal}, shared by every
 * anonymous caller. A name that is not a valid scope part (longer than 200 characters, a control
 * character), that starts with {@code "sha256:"}, or that equals the anonymous principal is replaced
 * by {@code "sha256:"} and its SHA-256, so distinct callers never share a scope.
 *
 * <p>Called on the caller's thread, once per call; must be thread-safe. An unchecked exception
 * propagates to the caller before any claim is made.
 */
@FunctionalInterface
public interface IdemPrincipalResolver {

  /** @return the current caller's name, or {@code null} or empty for an anonymous caller */
  @Nullable String currentPrincipal();
}
