package dev.idem.grpc;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Names the caller that an idempotency key belongs to: the principal part of the key's {@link
 * dev.idem.core.Scope} (the operation part is always the method's full name). The answer must come
 * from authentication (a verified client certificate, a token an earlier interceptor checked and
 * put in the {@link Context}), never from a field the caller controls, so that one caller never
 * gets another's stored answer.
 *
 * <p>{@code null} or an empty string means anonymous: the interceptor then uses its anonymous
 * principal. Called once per protected call, on the thread that starts the call, inside the context
 * that earlier interceptors attached ({@code Contexts.interceptCall}). Implementations must be
 * thread-safe; an unchecked exception fails the call before anything is claimed.
 */
@FunctionalInterface
public interface GrpcPrincipalResolver {

  /**
   * @param call the call, never {@code null}: its {@linkplain ServerCall#getAttributes() attributes}
   *     hold the transport's peer and TLS session
   * @param headers the call's metadata, never {@code null}
   * @param context the call's context, {@link Context#current()}, never {@code null}
   * @return the caller's stable name, or {@code null} or empty for an anonymous caller
   */
  @Nullable String resolve(ServerCall<?, ?> call, Metadata headers, Context context);

  /**
   * One principal for every call: a service whose callers all act for the same owner (a single
   * tenant, or callers authenticated by the network).
   *
   * @param principal the name, never {@code null}
   * @return a stateless, thread-safe resolver
   */
  static GrpcPrincipalResolver fixed(String principal) {
    Objects.requireNonNull(principal, "principal");
    return (call, headers, context) -> principal;
  }

  /**
   * The value an authenticating interceptor put in the call's context, by its {@code toString()}.
   *
   * @param key the context key, never {@code null}
   * @return a stateless, thread-safe resolver; anonymous when the context has no value
   */
  static GrpcPrincipalResolver fromContext(Context.Key<?> key) {
    Objects.requireNonNull(key, "key");
    return (call, headers, context) -> {
      Object value = key.get(context);
      return value == null ? null : value.toString();
    };
  }
}
