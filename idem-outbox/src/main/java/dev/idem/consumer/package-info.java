/**
 * Idempotent consumers, API: {@link dev.idem.consumer.IdempotentConsumer} runs a message's effect
 * once per message id and acknowledges the message only after the effect and the key commit.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.consumer;

import org.jspecify.annotations.NullMarked;
