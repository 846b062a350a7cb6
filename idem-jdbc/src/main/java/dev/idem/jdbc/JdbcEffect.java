package dev.idem.jdbc;

import dev.idem.core.StoredResponse;
import java.sql.Connection;

/**
 * The caller's effect in transactional mode: it writes through the given connection, inside the
 * transaction that also holds the claim, and returns the response to store.
 *
 * <p>The effect must not commit, roll back or change the auto-commit mode of the connection: Idem
 * (or the caller's own transaction) does. In a transaction Idem owns, the connection it passes
 * refuses {@code commit()}, {@code rollback()}, {@code setAutoCommit} and {@code close()} with an
 * {@link java.sql.SQLException}; it cannot stop SQL text such as {@code COMMIT} or {@code START
 * TRANSACTION} (which commits implicitly on MySQL), nor the driver's own connection reached through
 * {@code Statement.getConnection()} or {@code unwrap}: an effect that commits by those ways makes
 * its writes durable without their stored response, and duplicates then repeat them.
 *
 * <p>It runs at most once per successful claim; an exception rolls the claim back with it, so a
 * retry runs it again. With {@link JdbcIdempotency.Strategy#KEY_LAST} a racing duplicate may also
 * run it, and is then rolled back. A deadlock or serialization failure (SQLState class 40) rolls
 * the whole transaction back and, in a transaction Idem owns, runs it again.
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
