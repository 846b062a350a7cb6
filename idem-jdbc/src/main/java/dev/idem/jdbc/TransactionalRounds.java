package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Transactional mode's work on one connection, in a transaction already open: a caller's ({@link
 * JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)} on a connection with {@code
 * getAutoCommit() == false}), a {@link TransactionRunner}'s, or Idem's own ({@link
 * OwnTransactionRunner}). The rounds, their order and what a round's end means are {@link
 * TransactionalIdempotency}'s, the one engine; this class holds the statements of one round: the
 * lookup, then the claim-first work ({@link JoinedTransaction}), or the key-last work ({@link
 * #runThenRecord}). Every round ends with a {@link RoundEnd} value. Immutable; thread-safe.
 */
final class TransactionalRounds {

  private final EngineSettings settings;
  private final KeyTable keys;
  /** Whether claims wait a bounded time ({@link JdbcIdempotency.Builder#claimLockWait}). */
  private final boolean boundedClaims;
  private final KeyLast keyLast;
  private final JoinedTransaction joined;

  TransactionalRounds(EngineSettings settings, KeyTable keys, boolean boundedClaims) {
    this.settings = settings;
    this.keys = keys;
    this.boundedClaims = boundedClaims;
    this.keyLast = new KeyLast(settings);
    this.joined = new JoinedTransaction(settings);
  }

  /**
   * Claim-first work in an open transaction: the lookup (unless the caller made it already), the
   * claim, the effect, the stored response. With {@code confirming} the claim's lock wait is the
   * longer one of {@link EngineSettings#confirmWait}: {@link TransactionalIdempotency} makes sure so
   * that a bounded key statement that gave up waited on a concurrent attempt's row, and not on a
   * lock that any insert can meet for a moment (see {@link RoundEnd.ClaimGaveUp}).
   *
   * @param lookedUp whether the caller already looked for a live record outside the transaction,
   *     so that the lookup is not made twice
   * @param onEnsureClaimed what the effect's {@link dev.idem.core.EffectContext#ensureClaimed()}
   *     runs, the key being the attempt's already (the transactional engine learns that the answer
   *     began to reach the client), or {@code null} for nothing
   * @param own Idem's own transaction, in which the effect's connection is guarded and the
   *     completion may carry the {@code COMMIT}; {@code null} in a caller's or runner's
   * @return {@link RoundEnd.Answered} with the outcome, or {@link RoundEnd.ClaimGaveUp}; never
   *     another end
   */
  RoundEnd claimFirst(Connection connection, IdempotentRequest request, Effect effect, boolean confirming, boolean lookedUp,
      @Nullable Runnable onEnsureClaimed, OwnTransactionRunner.@Nullable OwnTransaction own) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    Dialect dialect = Dialect.of(connection);
    KeyTable.Statements sql = statementsFor(connection, dialect);
    keys.ensureSchema(connection, dialect, false);
    // Fast path for replays: one primary-key read that takes no lock. A replay must not lock the
    // row: in a caller's transaction that lock would be held to its end, so replays of the same
    // keys in other orders would deadlock. Skipped inside a transaction on SQLite
    // (KeyTable.readsReplaysOutsideTransactions), where a read before the claim's write could hit a
    // stale snapshot; SQLite has a single writer anyway (the engine reads before the transaction).
    // On PostgreSQL the read travels with the claim instead (KeyTableSql.lookupAndClaim): one round
    // trip fewer for a create, one more (the end of the transaction) for a replay.
    // Not on a read-only connection: its transaction refuses the claim's INSERT even when it would
    // insert nothing, so a replay, which needs no write, would fail.
    boolean lookupWithClaim = lookupWithClaim(connection, sql);
    if (!lookedUp && !lookupWithClaim && !KeyTable.readsReplaysOutsideTransactions(dialect)) {
      Outcome stored = keys.answerIfLive(connection, sql, request);
      if (stored != null) {
        return new RoundEnd.Answered(stored);
      }
    }
    return joined.run(connection, dialect, sql, request, effect,
        confirming ? settings.confirmWait(sql) : settings.claimWait(sql), onEnsureClaimed, own);
  }

  /**
   * @return whether the claim-first work reads the key's record in the claim's round trip (PostgreSQL,
   *     not on a read-only connection): then no read before it is needed
   */
  boolean lookupWithClaim(Connection connection, Dialect dialect) {
    return lookupWithClaim(connection, statementsFor(connection, dialect));
  }

  private static boolean lookupWithClaim(Connection connection, KeyTable.Statements sql) {
    return sql.sql.lookupAndClaim != null && !readOnly(connection);
  }

  /** @return the statements for the connection's database (MariaDB's on a MariaDB server, when the claim is bounded) */
  private KeyTable.Statements statementsFor(Connection connection, Dialect dialect) {
    return keys.statementsFor(connection, dialect, boundedClaims);
  }

  /**
   * {@link JdbcIdempotency.Strategy#KEY_LAST} in an open transaction of {@link
   * TransactionalIdempotency}'s runner, which has already looked for a live record ({@link
   * KeyLast#inRunnersTransaction}).
   *
   * @param own Idem's own transaction ({@link OwnTransactionRunner}), or {@code null} in a runner's
   * @return how the work ended; anything but a stored {@link RoundEnd.Answered} outcome asks the
   *     caller to roll the runner's transaction back
   */
  RoundEnd runThenRecord(Connection connection, IdempotentRequest request, Effect effect, Runnable onClaimed,
      OwnTransactionRunner.@Nullable OwnTransaction own) {
    Dialect dialect = Dialect.of(connection);
    KeyTable.Statements sql = statementsFor(connection, dialect);
    keys.ensureSchema(connection, dialect, false);
    return keyLast.inRunnersTransaction(connection, dialect, sql, request, effect, onClaimed, own);
  }

  /** @return whether the connection is marked read-only (pgjdbc answers from its own flag, no round trip) */
  private static boolean readOnly(Connection connection) {
    try {
      return connection.isReadOnly();
    } catch (SQLException e) {
      return false;
    }
  }
}
