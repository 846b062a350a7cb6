/**
 * An idempotent consumer for NATS JetStream, API: {@link
 * dev.idem.consumer.jetstream.JetStreamIdempotentConsumer}; the NATS client is the application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.consumer.jetstream;

import org.jspecify.annotations.NullMarked;
