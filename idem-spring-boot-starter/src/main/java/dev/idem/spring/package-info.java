/**
 * Idem for Spring Boot: the auto-configuration behind the {@code idem.*} properties, and the API
 * an application uses directly ({@link dev.idem.spring.Idempotent} methods); the other types are the
 * starter's own. The principal of a key's scope comes from a bean of Idem's one principal SPI,
 * {@link dev.idem.core.spi.PrincipalResolver}: {@code PrincipalResolver<Object>} for every stack, or
 * one typed for a stack's call ({@code HttpServletRequest}, {@code dev.idem.grpc.GrpcCall}).
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring;

import org.jspecify.annotations.NullMarked;
