package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.IdempotentRequest;
import java.sql.Connection;

/**
 * One round of a write order in a transaction Idem owns: {@link ClaimFirst} or {@link KeyLast}.
 * {@link JdbcIdempotency} runs the rounds of the order its strategy names on {@link
 * dev.idem.jdbc.internal.ConflictRetry#rounds}. Implementations are stateless and thread-safe.
 */
@FunctionalInterface
interface OwnTransactionRound {

  /**
   * Begins a transaction on {@code connection}, runs the order's statements and the effect, and
   * ends the transaction (commit or rollback) before it returns.
   *
   * @return how the round ended, never {@code null}
   * @throws RuntimeException a failure that ends the rounds, as {@link
   *     JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)} states
   */
  RoundEnd round(Connection connection, Dialect dialect, KeyTable.Statements sql, IdempotentRequest request, Effect effect);
}
