/**
 * The purge concern: the scheduled removal of completed keys past their retention
 * ({@code idem.purge.*}), at most one node at a time.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.purge;

import org.jspecify.annotations.NullMarked;
