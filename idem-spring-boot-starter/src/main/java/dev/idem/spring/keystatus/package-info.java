/**
 * The key status concern: the endpoint that tells a key's own principal what the store knows of
 * (scope, key) ({@code idem.key-status.*}), for routes and for {@code @Idempotent} methods.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.keystatus;

import org.jspecify.annotations.NullMarked;
