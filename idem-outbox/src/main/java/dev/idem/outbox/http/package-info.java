/**
 * An outbox transport over HTTP, API: {@link dev.idem.outbox.http.HttpTransport} sends each intent
 * with its id as the idempotency key, through {@code idem-client} (which the application brings).
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.outbox.http;

import org.jspecify.annotations.NullMarked;
