package dev.idem.jdbc;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.RequestInProgressException;
import java.time.Duration;

/**
 * A claim whose lock wait was bounded ({@link JdbcIdempotency.Builder#claimLockWait}) gave up
 * (PostgreSQL 55P03, MariaDB 1205), in a caller's transaction, which must now roll back. Most
 * often a concurrent attempt of the same key holds its row, but the bound is not specific to that
 * row: on PostgreSQL {@code lock_timeout} ends any lock wait of the statement, a relation
 * extension lock held for a moment while concurrent inserts grow the table or an index, or a
 * table lock of DDL, among them. {@link TransactionalIdempotency} therefore confirms the give-up
 * once with a longer bound before it answers in progress. A {@link RequestInProgressException},
 * as a caller of {@link JdbcIdempotency#execute(java.sql.Connection, dev.idem.core.IdempotentRequest,
 * dev.idem.core.Effect)} expects.
 */
final class ClaimGaveUp extends RequestInProgressException {
  private static final long serialVersionUID = 1L;

  ClaimGaveUp(IdempotencyKey key) {
    super(key, Duration.ofSeconds(1));
  }
}
