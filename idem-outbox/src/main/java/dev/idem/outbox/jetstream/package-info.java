/**
 * An outbox transport for NATS JetStream, API: {@link
 * dev.idem.outbox.jetstream.JetStreamTransport}, deduplicated by message id; the NATS client is the
 * application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.outbox.jetstream;

import org.jspecify.annotations.NullMarked;
