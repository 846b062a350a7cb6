package dev.idem.grpc;

import dev.idem.core.spi.PrincipalResolver;
import io.grpc.Context;
import java.util.Objects;

/**
 * The gRPC stack's {@link PrincipalResolver}s, called with a {@link GrpcCall}. For one principal
 * for every call, {@link PrincipalResolver#fixed(String)} (or {@link
 * IdempotencyServerInterceptor.Builder#principal(String)}). Stateless.
 */
public final class GrpcPrincipals {

  private GrpcPrincipals() {}

  /**
   * The value an authenticating interceptor put in the call's context, by its {@code toString()}.
   *
   * @param key the context key, never {@code null}
   * @return a stateless, thread-safe resolver; anonymous when the context has no value
   * @throws NullPointerException if {@code key} is {@code null}
   */
  public static PrincipalResolver<GrpcCall> fromContext(Context.Key<?> key) {
    Objects.requireNonNull(key, "key");
    return call -> {
      Object value = key.get(call.context());
      return value == null ? null : value.toString();
    };
  }
}
