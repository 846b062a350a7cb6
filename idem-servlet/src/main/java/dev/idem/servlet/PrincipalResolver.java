package dev.idem.servlet;

import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;

/**
 * Names the caller that an idempotency key belongs to: the principal part of the key's {@link
 * dev.idem.core.Scope}. The operation part is always the route's method and path pattern, so a
 * resolver cannot merge two routes. The draft's Security Considerations ask for exactly this: a
 * composite lookup key of the client's key and attributes known only to the server, so that one
 * client can never fetch another's stored response.
 *
 * <p>The answer must come from authentication (a verified user, client or tenant id), never from a
 * request field the caller controls. {@code null} or an empty string means anonymous: the filter
 * then uses {@link IdempotencyFilterConfig#anonymousPrincipal()}. A name that is not a valid scope
 * part (longer than 200 characters, a control character), that starts with {@code "sha256:"}, or
 * that equals the anonymous principal, is replaced by {@code "sha256:"} and its 64-hex-digit
 * SHA-256, so distinct callers never share a scope.
 *
 * <p>Implementations must be thread-safe: one instance serves every request at once. An unchecked
 * exception propagates to the container (a 500 error), before any claim is made.
 */
@FunctionalInterface
public interface PrincipalResolver {

  /**
   * @param request the request, never {@code null}; its body must not be read
   * @return the caller's stable name, or {@code null} or empty for an anonymous caller
   */
  @Nullable String resolve(HttpServletRequest request);

  /**
   * The default: the container's authenticated user, {@link HttpServletRequest#getUserPrincipal()}
   * and its {@link java.security.Principal#getName()}.
   *
   * @return a stateless, thread-safe resolver
   */
  static PrincipalResolver userPrincipal() {
    return request -> request.getUserPrincipal() == null ? null : request.getUserPrincipal().getName();
  }
}
