/**
 * The anyonce conformance vectors for the IETF Idempotency-Key header draft (third-party,
 * Apache-2.0, in this jar under {@code conformance/anyonce-vectors}) and their runner, {@link
 * dev.idem.testkit.conformance.AnyonceConformance}, which drives an Idempotency-Key filter over
 * real HTTP: every filter of Idem (the servlet one, the WebFlux one) runs the same vectors through
 * it.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.testkit.conformance;

import org.jspecify.annotations.NullMarked;
