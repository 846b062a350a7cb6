/**
 * The outbox concern: {@link dev.idem.spring.outbox.IdemOutbox}, which records outgoing messages in the
 * transaction of the effect, and {@link dev.idem.spring.outbox.IdemOutboxRelay}, which delivers them
 * through Spring AMQP or Spring for Apache Kafka.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.outbox;

import org.jspecify.annotations.NullMarked;
