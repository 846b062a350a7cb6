/**
 * The Kafka concern: idempotent consumers of Spring for Apache Kafka listeners
 * ({@link dev.idem.spring.kafka.IdemKafkaListeners}); a record is acknowledged only after its effect
 * and key commit.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.kafka;

import org.jspecify.annotations.NullMarked;
