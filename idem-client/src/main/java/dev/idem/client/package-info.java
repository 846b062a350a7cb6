/**
 * The client side, API: {@link dev.idem.client.IdempotentHttpClient}, which sends one idempotency
 * key per operation on {@code java.net.http} and retries it safely (backoff, {@code Retry-After},
 * deadlines, a shared retry budget), with an optional {@link dev.idem.client.PendingJournal} of
 * operations whose outcome is not known yet.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.client;

import org.jspecify.annotations.NullMarked;
