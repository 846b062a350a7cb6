package dev.idem.jdbc;

import dev.idem.core.StoredResponse;
import java.sql.Connection;

/**
 * The caller's effect in transactional mode: it writes through the given connection, inside the
 * transaction that also holds the claim, and returns the response to store.
 *
 * <p>The effect must not commit, roll back or change the auto-commit mode of the connection: Idem
 * (or the caller's own transaction) does. It runs at most once per successful claim; an exception
 * rolls the claim back with it, so a retry runs it again.
 */
@FunctionalInterface
public interface JdbcEffect {

  /**
   * @param connection the connection of the transaction, never {@code null}
   * @return the response to store and return, never {@code null}
   * @throws Exception anything; a checked exception reaches the caller wrapped in {@link
   *     dev.idem.core.EffectFailedException}, an unchecked one as it is
   */
  StoredResponse apply(Connection connection) throws Exception;
}
