/**
 * Idem on JDBC, API: transactional mode ({@link dev.idem.jdbc.TransactionalIdempotency} and its
 * {@link dev.idem.jdbc.TransactionRunner} SPI, with {@link dev.idem.jdbc.DataSourceTransactionRunner}
 * for plain JDBC), the key table ({@link dev.idem.jdbc.JdbcIdempotency}) and the lease store on a
 * database ({@link dev.idem.jdbc.JdbcLeaseStore}). The JDBC driver is the application's.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.jdbc;

import org.jspecify.annotations.NullMarked;
