package dev.idem.testkit;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.jdbc.JdbcTarget;
import java.util.Objects;

/**
 * What a store's test says to the {@linkplain TransactionalContract transactional contracts}: the
 * database under test and the write order the contracts build their engines with. A store passes
 * the contracts in both orders: {@link JdbcIdempotency.Strategy#KEY_LAST}, the library's default,
 * and {@link JdbcIdempotency.Strategy#CLAIM_FIRST}, which is also the order of every call in a
 * caller's own transaction. Immutable and thread-safe.
 *
 * <pre>{@code
 * TransactionalTarget.of(db.target())                                          // claim-first
 * TransactionalTarget.of(db.target()).strategy(JdbcIdempotency.Strategy.KEY_LAST)
 * }</pre>
 */
public final class TransactionalTarget {

  private final JdbcTarget database;
  private final JdbcIdempotency.Strategy strategy;

  private TransactionalTarget(JdbcTarget database, JdbcIdempotency.Strategy strategy) {
    this.database = Objects.requireNonNull(database, "database");
    this.strategy = Objects.requireNonNull(strategy, "strategy");
  }

  /**
   * @param database where the contracts open their connections; they wait for locks (see {@link
   *     JdbcTarget}), never {@code null}
   * @return the database with {@link JdbcIdempotency.Strategy#CLAIM_FIRST} (not the library's
   *     default: {@link #strategy} names the other order explicitly)
   * @throws NullPointerException if {@code database} is {@code null}
   */
  public static TransactionalTarget of(JdbcTarget database) {
    return new TransactionalTarget(database, JdbcIdempotency.Strategy.CLAIM_FIRST);
  }

  /**
   * @param order the write order to run the contracts with, never {@code null}
   * @return the same database with that write order
   * @throws NullPointerException if {@code order} is {@code null}
   */
  public TransactionalTarget strategy(JdbcIdempotency.Strategy order) {
    return new TransactionalTarget(database, order);
  }

  /** @return the database under test */
  public JdbcTarget database() {
    return database;
  }

  /** @return the write order under test */
  public JdbcIdempotency.Strategy strategy() {
    return strategy;
  }

  @Override
  public String toString() {
    return database + " (" + strategy + ")";
  }
}
