/**
 * The HTTP rules of the {@code Idempotency-Key} header field (draft-ietf-httpapi-idempotency-key-header)
 * that every HTTP integration applies the same way, without a framework: parsing the key field
 * ({@link dev.idem.core.http.KeyHeader}), which response header fields are never stored or
 * replayed ({@link dev.idem.core.http.HeaderRules}), Idem's problems and the one mapping from an
 * engine's result to them ({@link dev.idem.core.http.ProblemCatalog}), and their RFC 9457 JSON
 * ({@link dev.idem.core.http.ProblemDetails}). The servlet filter (idem-servlet) and the WebFlux
 * filter (idem-webflux) both use it, so that a request gets the same answer on either stack; an
 * application does not need it. Stateless and thread-safe.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.core.http;

import org.jspecify.annotations.NullMarked;
