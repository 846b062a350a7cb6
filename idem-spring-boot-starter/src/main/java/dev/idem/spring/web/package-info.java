/**
 * The servlet concern: the Idempotency-Key filter of Spring MVC and servlet applications, its route
 * policies (from {@code idem.routes.*} and {@code @IdempotencyPolicy}) and their start-up check, the
 * problem details of {@code @Idempotent} methods' refusals in Spring MVC, the operation names of
 * Spring MVC handlers, and the refusal of a reactive web application (which Idem does not protect).
 * Exclude {@link dev.idem.spring.web.IdemWebAutoConfiguration} to keep Idem off HTTP.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.web;

import org.jspecify.annotations.NullMarked;
