package dev.idem.core;

import java.sql.Connection;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What an {@link Effect} is told about its run: in lease mode the claim ({@link #lease()}), in
 * transactional mode the connection of the transaction that holds the key's record ({@link
 * #connection()}). Exactly one of the two is present ({@link #inTransaction()} says which). Immutable; the connection, as JDBC requires,
 * is used by the effect's thread only and only until the effect returns, and so is {@link
 * #ensureClaimed()}.
 */
public final class EffectContext {

  private final @Nullable LeaseContext lease;
  private final @Nullable Connection connection;
  private final Runnable claim;

  private EffectContext(@Nullable LeaseContext lease, @Nullable Connection connection, Runnable claim) {
    this.lease = lease;
    this.connection = connection;
    this.claim = claim;
  }

  /** The claim of a context whose key is already this attempt's. */
  private static final Runnable HELD = () -> {};

  /**
   * @param lease the claim, never {@code null}
   * @return the context of a run in lease mode
   * @throws NullPointerException if {@code lease} is {@code null}
   */
  public static EffectContext ofLease(LeaseContext lease) {
    return new EffectContext(Objects.requireNonNull(lease, "lease"), null, HELD);
  }

  /**
   * @param connection the connection of the transaction the effect writes in, never {@code null}
   * @return the context of a run in transactional mode
   * @throws NullPointerException if {@code connection} is {@code null}
   */
  public static EffectContext ofTransaction(Connection connection) {
    return new EffectContext(null, Objects.requireNonNull(connection, "connection"), HELD);
  }

  /**
   * The context of a run in transactional mode whose key is recorded after the effect (key-last
   * order), so that it is not this attempt's yet while the effect runs.
   *
   * @param connection the connection of the transaction the effect writes in, never {@code null}
   * @param claim claims the key in that transaction when the effect calls {@link #ensureClaimed()};
   *     called on the effect's thread, at most as often as the effect calls it, never {@code null}
   * @return the context of a run in transactional mode
   * @throws NullPointerException if an argument is {@code null}
   */
  public static EffectContext ofTransaction(Connection connection, Runnable claim) {
    return new EffectContext(null, Objects.requireNonNull(connection, "connection"), Objects.requireNonNull(claim, "claim"));
  }

  /**
   * @return whether the effect runs inside a database transaction (transactional mode, {@link
   *     #connection()}), or outside any (lease mode, {@link #lease()})
   */
  public boolean inTransaction() {
    return connection != null;
  }

  /**
   * @return the claim (lease mode): scope, key, owner token, and whether an earlier owner's effect
   *     may have happened ({@link LeaseContext#recovery()}); never {@code null}
   * @throws IllegalStateException in transactional mode ({@link #inTransaction()}), where there is
   *     no lease: the key's record commits with the effect's writes
   */
  public LeaseContext lease() {
    if (lease == null) {
      throw new IllegalStateException("the effect runs in a database transaction (transactional mode): there is no lease;"
          + " use connection()");
    }
    return lease;
  }

  /**
   * @return the transaction's connection (transactional mode), never {@code null}: whatever the
   *     effect writes on it commits or rolls back with the key's record; the effect must not
   *     commit, roll back or close it
   * @throws IllegalStateException in lease mode, where the effect runs outside any database
   *     transaction of Idem's ({@link #inTransaction()} is {@code false})
   */
  public Connection connection() {
    if (connection == null) {
      throw new IllegalStateException("the effect runs outside a database transaction (lease mode): there is no connection;"
          + " use lease()");
    }
    return connection;
  }

  /**
   * Makes sure the key is this attempt's before the effect does something that rolling back its
   * transaction cannot take back. The servlet filter calls it just before the first byte of an
   * answer that streams to the client (an answer longer than it keeps in memory): once a client
   * has seen an answer, no racing duplicate's answer may be the one that commits.
   *
   * <p>In lease mode, and in transactional mode when the key was claimed before the effect (claim
   * first), the key is already this attempt's and this returns at once. When the engine records the
   * key after the effect (key last), the first call claims it in the transaction, waiting, like any
   * claim, for a concurrent attempt of the same key to end; later calls return at once. Call it on
   * the effect's thread, before the effect returns.
   *
   * @throws RequestInProgressException if another attempt holds the key or has answered it: the
   *     effect must stop and let this exception, or one it causes, propagate; it must not catch it
   *     and answer. The engine rolls the transaction back and answers from the other attempt (its
   *     replay, a reused key, or in progress)
   * @throws IdemStoreException if the claim's statement failed
   */
  public void ensureClaimed() {
    claim.run();
  }
}
