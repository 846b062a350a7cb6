package dev.idem.core;

import java.sql.Connection;
import java.util.Objects;
import java.util.Optional;

/**
 * What an {@link Effect} is told about its run: in lease mode the claim ({@link #lease()}), in
 * transactional mode the connection of the transaction that holds the key's record ({@link
 * #connection()}). Exactly one of the two is present. Immutable; the connection, as JDBC requires,
 * is used by the effect's thread only and only until the effect returns.
 */
public final class EffectContext {

  private final LeaseContext lease;
  private final Connection connection;

  private EffectContext(LeaseContext lease, Connection connection) {
    this.lease = lease;
    this.connection = connection;
  }

  /**
   * @param lease the claim, never {@code null}
   * @return the context of a run in lease mode
   * @throws NullPointerException if {@code lease} is {@code null}
   */
  public static EffectContext ofLease(LeaseContext lease) {
    return new EffectContext(Objects.requireNonNull(lease, "lease"), null);
  }

  /**
   * @param connection the connection of the transaction the effect writes in, never {@code null}
   * @return the context of a run in transactional mode
   * @throws NullPointerException if {@code connection} is {@code null}
   */
  public static EffectContext ofTransaction(Connection connection) {
    return new EffectContext(null, Objects.requireNonNull(connection, "connection"));
  }

  /**
   * @return the claim (lease mode): scope, key, owner token, and whether an earlier owner's effect
   *     may have happened ({@link LeaseContext#recovery()}); empty in transactional mode
   */
  public Optional<LeaseContext> lease() {
    return Optional.ofNullable(lease);
  }

  /**
   * @return the transaction's connection (transactional mode): whatever the effect writes on it
   *     commits or rolls back with the key's record; the effect must not commit, roll back or close
   *     it. Empty in lease mode
   */
  public Optional<Connection> connection() {
    return Optional.ofNullable(connection);
  }
}
