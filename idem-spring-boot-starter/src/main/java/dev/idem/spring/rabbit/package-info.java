/**
 * The RabbitMQ concern: idempotent consumers of Spring AMQP listeners
 * ({@link dev.idem.spring.rabbit.IdemRabbitListeners}); a message is acknowledged only after its
 * effect and key commit.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.rabbit;

import org.jspecify.annotations.NullMarked;
