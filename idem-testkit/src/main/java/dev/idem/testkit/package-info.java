/**
 * For store authors, in test scope: the contract suites every backend passes ({@link
 * dev.idem.testkit.TransactionalContract}, {@link dev.idem.testkit.LeaseContract}), test databases
 * and a store that fails on demand.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.testkit;

import org.jspecify.annotations.NullMarked;
