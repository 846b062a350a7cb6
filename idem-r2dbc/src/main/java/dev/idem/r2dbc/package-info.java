/**
 * Idem's lease mode without blocking on R2DBC: {@link dev.idem.r2dbc.R2dbcLeaseStore}, an {@link
 * dev.idem.core.spi.AsyncLeaseStore} on an {@code io.r2dbc.spi.ConnectionFactory}, for {@link
 * dev.idem.core.AsyncLeaseIdempotency} and the WebFlux filter (idem-webflux).
 *
 * <p>Databases: PostgreSQL (r2dbc-postgresql) and MariaDB or MySQL (r2dbc-mariadb), chosen from
 * the factory's metadata; anything else is refused when the store is built. The store uses the
 * key table of idem-jdbc's {@code JdbcLeaseStore}, with the same rows and statements (taken from
 * {@code dev.idem.jdbc.dialect}, not copied), so a key stored by either store is replayed by the
 * other: moving an application from JDBC to R2DBC, or running both side by side on one table,
 * runs no retried request twice.
 *
 * <pre>{@code
 * R2dbcLeaseStore store = R2dbcLeaseStore.builder(connectionFactory) // a pool, such as r2dbc-pool
 *     .table("idem_keys")                                             // the default
 *     .build();
 * AsyncLeaseIdempotency idem = AsyncLeaseIdempotency.builder(store).build();
 * }</pre>
 *
 * <p>In a Spring Boot WebFlux application, idem-spring-boot-starter makes this store from Spring
 * Boot's {@code ConnectionFactory} with {@code idem.mode=lease} and {@code idem.store=r2dbc} (or
 * {@code auto}); see docs/reactive.md. Transactional mode (the key and the handler's writes in one
 * transaction) is not offered on R2DBC.
 */
@NullMarked
package dev.idem.r2dbc;

import org.jspecify.annotations.NullMarked;
