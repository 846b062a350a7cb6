/**
 * The {@code Idempotency-Key} header field (draft-ietf-httpapi-idempotency-key-header) on Spring
 * WebFlux: {@link dev.idem.webflux.IdempotencyWebFilter}, configured by {@link
 * dev.idem.webflux.IdempotencyWebFilterConfig}, runs a request's handler at most once per key on
 * Idem's non-blocking lease mode ({@link dev.idem.core.AsyncLeaseIdempotency}) and answers as the
 * servlet filter of idem-servlet does.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.webflux;

import org.jspecify.annotations.NullMarked;
