package dev.idem.core.spi;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Names the caller that an idempotency key belongs to: the principal part of the key's {@link
 * dev.idem.core.Scope}. The one principal SPI of every integration, parameterized by the stack's
 * call:
 *
 * <ul>
 *   <li>the servlet filter and its key status endpoint: {@code
 *       PrincipalResolver<jakarta.servlet.http.HttpServletRequest>} (default {@code
 *       dev.idem.servlet.ServletPrincipals#userPrincipal()});
 *   <li>the gRPC interceptor: {@code PrincipalResolver<dev.idem.grpc.GrpcCall>}, the call, its
 *       metadata and its context ({@code dev.idem.grpc.GrpcPrincipals#fromContext});
 *   <li>the Spring Boot starter: a bean of {@code PrincipalResolver<Object>} is the application's
 *       resolver for every stack ({@code @Idempotent} methods, the filter, the key status endpoint,
 *       gRPC), called with that stack's call; a bean typed for one stack ({@code
 *       PrincipalResolver<HttpServletRequest>}, {@code PrincipalResolver<GrpcCall>}) serves that stack
 *       only and wins over it there.
 * </ul>
 *
 * <p>The operation part of the scope is always the integration's (the route, the gRPC method, the
 * Java method), so a resolver cannot merge two operations. The answer must come from
 * authentication (a verified user, client or tenant id, a client certificate, a token an earlier
 * interceptor checked), never from a request field or an argument the caller controls: the
 * scope is what keeps one client from fetching another's stored response (the draft's Security
 * Considerations ask for exactly this).
 *
 * <p>{@code null} or an empty string means anonymous: the integration then uses its anonymous
 * principal. A name that is not a valid scope part (longer than {@value
 * dev.idem.core.Scope#MAX_PART_LENGTH} characters, a control character), that starts with {@code
 * "sha256:"}, or that equals the anonymous principal, is replaced by {@code "sha256:"} and its
 * SHA-256 ({@link dev.idem.core.Scope#principalPart}), so distinct callers never share a scope. The
 * string returned is stored as part of every key's scope: a resolver must return the same string
 * for the same caller across versions, or earlier keys stop being found.
 *
 * <p>Implementations must be thread-safe: one instance serves every call at once. Called once per
 * protected call, on the thread that handles it, before anything is claimed; an unchecked exception
 * propagates to the integration, which fails the call (a servlet container answers 500).
 *
 * @param <C> the stack's call, from which the caller's authenticated identity is read
 */
@FunctionalInterface
public interface PrincipalResolver<C> {

  /**
   * @param call the call being protected, never {@code null}; a request body must not be read
   * @return the caller's stable name, or {@code null} or empty for an anonymous caller
   */
  @Nullable String resolve(C call);

  /**
   * One principal for every call: a service whose callers all act for the same owner (a single
   * tenant, or callers authenticated by the network).
   *
   * @param principal the name, never {@code null}
   * @param <C> the stack's call
   * @return a stateless, thread-safe resolver
   * @throws NullPointerException if {@code principal} is {@code null}
   */
  static <C> PrincipalResolver<C> fixed(String principal) {
    Objects.requireNonNull(principal, "principal");
    return call -> principal;
  }

  /**
   * Every caller anonymous: every call's scope has the integration's anonymous principal, so any
   * caller may receive any other caller's stored answer.
   *
   * @param <C> the stack's call
   * @return a stateless, thread-safe resolver that returns {@code null}
   */
  static <C> PrincipalResolver<C> anonymous() {
    return call -> null;
  }
}
