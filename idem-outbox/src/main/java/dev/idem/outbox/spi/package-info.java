/**
 * The outbox's SPI: {@link dev.idem.outbox.spi.IntentTransport} delivers an intent to a broker
 * or an HTTP endpoint and reports a {@link dev.idem.outbox.spi.Delivery}. Implement it for a
 * transport Idem does not ship.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.outbox.spi;

import org.jspecify.annotations.NullMarked;
