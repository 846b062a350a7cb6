/**
 * Idem for Spring Boot: the auto-configuration behind the {@code idem.*} properties, and the API
 * an application uses directly ({@link dev.idem.spring.Idempotent} methods, {@link
 * dev.idem.spring.IdemPrincipalResolver}); the other types are the starter's own.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring;

import org.jspecify.annotations.NullMarked;
