/**
 * The gRPC concern: Idem's server interceptor for Spring gRPC services, with method policies
 * ({@code idem.grpc.*}) and the principal of a call.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.grpc;

import org.jspecify.annotations.NullMarked;
