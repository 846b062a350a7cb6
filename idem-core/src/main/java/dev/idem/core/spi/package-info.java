/**
 * Idem's SPI for store implementations: the lease-mode store ({@link dev.idem.core.spi.LeaseStore},
 * {@link dev.idem.core.spi.ClaimResult}) and the byte format of a stored response ({@link
 * dev.idem.core.spi.StoredResponseCodec}). Applications use the stores; store authors implement
 * these and run {@code idem-testkit}'s contract suites. And the one SPI that applications
 * implement for every integration: {@link dev.idem.core.spi.PrincipalResolver}, who owns a key.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.core.spi;

import org.jspecify.annotations.NullMarked;
