/**
 * The steps concern: named steps and recovery points of multi-step operations under one key.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.steps;

import org.jspecify.annotations.NullMarked;
