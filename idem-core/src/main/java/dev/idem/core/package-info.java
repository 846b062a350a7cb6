/**
 * The engine contract and its vocabulary, Idem's API: {@link dev.idem.core.IdempotencyEngine}
 * ({@code attempt(request, effect)} returning an {@link dev.idem.core.AttemptResult}), lease mode
 * ({@link dev.idem.core.LeaseIdempotency}), and the values every module shares: idempotency keys,
 * scopes, fingerprints, stored responses, outcomes and exceptions.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.core;

import org.jspecify.annotations.NullMarked;
