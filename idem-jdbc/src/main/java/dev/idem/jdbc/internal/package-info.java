/**
 * Internal to {@code idem-jdbc}: the key table's statements per dialect, its schema script and
 * check, retries on conflicts, transaction helpers. Not API: no other module, and no application,
 * may use it; it changes without notice.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.jdbc.internal;

import org.jspecify.annotations.NullMarked;
