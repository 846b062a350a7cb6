/**
 * Idempotency keys for grpc-java unary calls, API: {@link dev.idem.grpc.IdempotencyServerInterceptor}
 * runs each keyed unary call at most once on any {@link dev.idem.core.IdempotencyEngine} and replays
 * its stored answer; {@link dev.idem.grpc.IdempotencyClientInterceptor} gives every attempt of one
 * logical call (the channel's retries and hedged copies) the same key; {@link
 * dev.idem.grpc.IdempotencyKeys} holds the metadata and call-option keys and the helper for callers
 * who retry by hand; {@link dev.idem.grpc.MessageFingerprints} is the fingerprint rule; {@link
 * dev.idem.grpc.GrpcTransactions} gives a handler the transaction's connection in transactional
 * mode.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.grpc;

import org.jspecify.annotations.NullMarked;
