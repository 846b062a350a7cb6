/**
 * The databases Idem's JDBC store supports, one {@link dev.idem.jdbc.Dialect} class per database:
 * its key table statements and schema, the check of an existing table's columns, how a transaction
 * is begun, how a lock wait is bounded, and its traits. Use them through the constants of {@link
 * dev.idem.jdbc.Dialect} ({@code Dialect.POSTGRESQL}) or {@link dev.idem.jdbc.Dialect#of}; the
 * classes are public so that their documentation is, and are not meant to be subclassed. {@link
 * dev.idem.jdbc.dialect.KeyTableSql} is the statements a dialect gives the key table.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.jdbc.dialect;

import org.jspecify.annotations.NullMarked;
