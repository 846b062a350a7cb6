/**
 * An idempotent consumer for RabbitMQ, API: {@link
 * dev.idem.consumer.rabbitmq.RabbitMqIdempotentConsumer}; the RabbitMQ client is the application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.consumer.rabbitmq;

import org.jspecify.annotations.NullMarked;
