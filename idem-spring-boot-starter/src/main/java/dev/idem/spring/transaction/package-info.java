/**
 * The transactional concern: transactional mode on the application's {@code DataSource} and Spring
 * transaction manager, so that the effect, the key and the stored response commit in one
 * transaction.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.transaction;

import org.jspecify.annotations.NullMarked;
