package dev.idem.grpc;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import java.util.Objects;

/**
 * What the gRPC interceptor gives a {@link dev.idem.core.spi.PrincipalResolver} to name the caller
 * of a protected call: a {@code PrincipalResolver<GrpcCall>} (or {@code PrincipalResolver<Object>}).
 * Made once per protected call, on the thread that starts it, inside the context that earlier
 * interceptors attached ({@code Contexts.interceptCall}). Immutable; its parts are gRPC's own.
 *
 * @param call the call, never {@code null}: its {@linkplain ServerCall#getAttributes() attributes}
 *     hold the transport's peer and TLS session
 * @param headers the call's metadata, never {@code null}
 * @param context the call's context, {@link Context#current()} when the call started, never {@code
 *     null}
 */
public record GrpcCall(ServerCall<?, ?> call, Metadata headers, Context context) {

  /** @throws NullPointerException if a part is {@code null} */
  public GrpcCall {
    Objects.requireNonNull(call, "call");
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(context, "context");
  }
}
