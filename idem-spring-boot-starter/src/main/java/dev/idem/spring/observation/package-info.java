/**
 * The observation concern: Micrometer metrics and observations of claims, replays, refusals and
 * releases, for requests, methods and consumers.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.observation;

import org.jspecify.annotations.NullMarked;
