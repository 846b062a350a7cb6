/**
 * The method concern: {@code @Idempotent} methods of Spring beans, run through Idem by an AOP
 * interceptor in transactional or lease mode, with the return types Idem can store and replay.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.method;

import org.jspecify.annotations.NullMarked;
