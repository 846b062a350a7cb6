/**
 * Idem on NATS JetStream, API: {@link dev.idem.jetstream.JetStreamTransport} is the outbox relay's
 * transport to JetStream (deduplicated by message id), and {@link
 * dev.idem.jetstream.JetStreamIdempotentConsumer} runs an {@link
 * dev.idem.consumer.IdempotentConsumer} on JetStream messages and acknowledges a message only after
 * its effect and its idempotency key committed. The NATS Java client ({@code jnats}) is the
 * application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.jetstream;

import org.jspecify.annotations.NullMarked;
