/**
 * The {@code Idempotency-Key} header on Jakarta Servlet 6, API: {@link
 * dev.idem.servlet.IdempotencyFilter} on any {@link dev.idem.core.IdempotencyEngine}, its {@link
 * dev.idem.servlet.IdempotencyFilterConfig}, and the answers Idem gives itself ({@link
 * dev.idem.servlet.IdemProblem}, {@link dev.idem.servlet.ProblemRenderer}).
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.servlet;

import org.jspecify.annotations.NullMarked;
