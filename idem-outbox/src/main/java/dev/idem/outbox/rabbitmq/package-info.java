/**
 * An outbox transport for RabbitMQ, API: {@link dev.idem.outbox.rabbitmq.RabbitMqTransport}, with
 * publisher confirms; the RabbitMQ client is the application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.outbox.rabbitmq;

import org.jspecify.annotations.NullMarked;
