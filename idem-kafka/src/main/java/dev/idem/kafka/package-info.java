/**
 * Idem on Kafka, API: {@link dev.idem.kafka.KafkaIdempotentConsumer} runs an {@link
 * dev.idem.consumer.IdempotentConsumer} on topics with the plain Kafka client and commits a
 * record's offset only after its effect and its idempotency key committed; {@link
 * dev.idem.kafka.KafkaRecordHandler} does the same for records that another container (Spring
 * Kafka's) polls; {@link dev.idem.kafka.KafkaTransport} is the outbox relay's transport to Kafka,
 * with the idempotent producer. The Kafka client ({@code kafka-clients}) is the application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.kafka;

import org.jspecify.annotations.NullMarked;
