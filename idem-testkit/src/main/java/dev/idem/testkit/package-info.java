/**
 * For store authors, in test scope: the contract suites every backend passes, test databases and
 * a store that fails on demand.
 *
 * <ul>
 *   <li>Transactional mode: {@link dev.idem.testkit.ExecuteContract}, {@link
 *       dev.idem.testkit.FailureContract}, {@link dev.idem.testkit.ConcurrencyContract}, {@link
 *       dev.idem.testkit.KeyTableContract}, {@link dev.idem.testkit.KeyStatusContract}, {@link
 *       dev.idem.testkit.ResponseProtectionContract}, {@link dev.idem.testkit.RunnerContract} and
 *       {@link dev.idem.testkit.InProgressContract}, one job each. Each has one hook, {@code
 *       target()}, which returns a {@link dev.idem.testkit.TransactionalTarget} (the database and
 *       the write order); a store's test runs them all by extending {@link
 *       dev.idem.testkit.AllTransactionalContracts}, one test class per database with one method,
 *       as {@link dev.idem.testkit.TransactionalContract}'s Javadoc shows.
 *   <li>Lease mode: {@link dev.idem.testkit.LeaseContract} for a store that also reads key statuses
 *       and protects responses, as every store Idem ships does; {@link
 *       dev.idem.testkit.LeaseStoreContract} alone for one that does neither; {@link
 *       dev.idem.testkit.AsyncLeaseStoreContract} for a non-blocking store ({@link
 *       dev.idem.core.spi.AsyncLeaseStore}). Every hook is
 *       abstract: a missing one is a compile error, not a failure at run time.
 *   <li>{@link dev.idem.testkit.TestDatabase}: a database per test class; {@link
 *       dev.idem.testkit.FlakyLeaseStore}: a store that fails on demand.
 * </ul>
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.testkit;

import org.jspecify.annotations.NullMarked;
