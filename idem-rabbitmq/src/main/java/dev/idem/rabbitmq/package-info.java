/**
 * Idem on RabbitMQ, API: {@link dev.idem.rabbitmq.RabbitMqTransport} is the outbox relay's
 * transport to RabbitMQ (persistent, mandatory messages with publisher confirms), and {@link
 * dev.idem.rabbitmq.RabbitMqIdempotentConsumer} runs an {@link dev.idem.consumer.IdempotentConsumer}
 * on a queue and acknowledges a message only after its effect and its idempotency key committed.
 * The RabbitMQ Java client ({@code amqp-client}) is the application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.rabbitmq;

import org.jspecify.annotations.NullMarked;
