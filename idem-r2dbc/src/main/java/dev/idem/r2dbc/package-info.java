/**
 * Idem on R2DBC, without blocking, in both modes: {@link dev.idem.r2dbc.R2dbcLeaseStore}, an {@link
 * dev.idem.core.spi.AsyncLeaseStore} on an {@code io.r2dbc.spi.ConnectionFactory}, for {@link
 * dev.idem.core.AsyncLeaseIdempotency} and the WebFlux filter (idem-webflux); and {@link
 * dev.idem.r2dbc.R2dbcTransactionalIdempotency}, transactional mode, where the effect's writes and
 * the key's record commit in one transaction ({@link dev.idem.r2dbc.R2dbcTransactions} says whose:
 * Idem's own, or a framework's such as Spring's {@code TransactionalOperator}).
 *
 * <p>Databases: PostgreSQL (r2dbc-postgresql) and MariaDB or MySQL (r2dbc-mariadb), chosen from
 * the factory's metadata; anything else is refused when the store is built. Both use the
 * key table of idem-jdbc's {@code JdbcLeaseStore}, with the same rows and statements (taken from
 * {@code dev.idem.jdbc.dialect}, not copied), so a key stored by any of them is replayed by the
 * others: moving an application from JDBC to R2DBC, or running both side by side on one table,
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
 * {@code auto}), and transactional mode with Spring's {@code R2dbcTransactionManager}; see
 * docs/reactive.md.
 */
@NullMarked
package dev.idem.r2dbc;

import org.jspecify.annotations.NullMarked;
