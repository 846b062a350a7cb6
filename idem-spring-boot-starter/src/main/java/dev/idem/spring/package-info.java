/**
 * Idem for Spring Boot: the API an application uses directly ({@link dev.idem.spring.Idempotent}
 * methods, {@link dev.idem.spring.IdempotencyPolicy}, {@link dev.idem.spring.IdempotentCalls}, the
 * exceptions), the {@code idem.*} properties and the base auto-configuration. Each concern (the
 * servlet filter, {@code @Idempotent} methods, the store, the listeners, ...) is a sub-package with
 * an auto-configuration of its own, so that an application can exclude it. The principal of a key's scope comes from a bean of Idem's one principal SPI,
 * {@link dev.idem.core.spi.PrincipalResolver}: {@code PrincipalResolver<Object>} for every stack, or
 * one typed for a stack's call ({@code HttpServletRequest}, {@code dev.idem.grpc.GrpcCall}).
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring;

import org.jspecify.annotations.NullMarked;
