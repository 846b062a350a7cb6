/**
 * Internal to {@code idem-grpc}: the server call that captures a handler's answer, and the codec
 * between a gRPC answer and a {@link dev.idem.core.StoredResponse}. Not API: no other module, and no
 * application, may use it; it changes without notice.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.grpc.internal;

import org.jspecify.annotations.NullMarked;
