/**
 * The store concern: the lease store that {@code idem.store} chooses (JDBC, Redis through Spring Data
 * Redis or Jedis, in memory) with its decorators, and the lease-mode engine on it.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.store;

import org.jspecify.annotations.NullMarked;
