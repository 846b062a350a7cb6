/**
 * The tracing concern: the trace context that goes with each outbox intent and that the idempotent
 * consumers continue, over Micrometer Tracing when the application has a tracer.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.tracing;

import org.jspecify.annotations.NullMarked;
