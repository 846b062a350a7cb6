package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.ConflictRetry.Round;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Transactional mode's work on one connection, for {@link JdbcIdempotency}: the lookup, then
 * either rounds in transactions Idem owns (a connection in auto-commit mode), in the order of the
 * key table's {@link JdbcIdempotency.Strategy}, picked once at build time, or the claim-first work
 * in a transaction the caller or a {@link TransactionRunner} opened ({@link JoinedTransaction}),
 * or key-last work in a runner's transaction ({@link #runThenRecord}). Every round ends with a
 * {@link RoundEnd} value. Immutable; thread-safe.
 */
final class TransactionalRounds {

  private final EngineSettings settings;
  private final KeyTable keys;
  private final JdbcIdempotency.Strategy strategy;
  /** Whether claims wait a bounded time ({@link JdbcIdempotency.Builder#claimLockWait}). */
  private final boolean boundedClaims;
  private final ClaimFirst claimFirst;
  private final KeyLast keyLast;
  /** The order of the rounds in transactions Idem owns, picked from the strategy once. */
  private final OwnTransactionRound ownOrder;
  private final JoinedTransaction joined;

  TransactionalRounds(EngineSettings settings, KeyTable keys, JdbcIdempotency.Strategy strategy, boolean boundedClaims) {
    this.settings = settings;
    this.keys = keys;
    this.strategy = strategy;
    this.boundedClaims = boundedClaims;
    this.claimFirst = new ClaimFirst(settings);
    this.keyLast = new KeyLast(settings);
    this.ownOrder = strategy == JdbcIdempotency.Strategy.KEY_LAST ? keyLast : claimFirst;
    this.joined = new JoinedTransaction(settings);
  }

  /**
   * As {@link JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)}; with {@code confirming}, in a
   * caller's transaction, the claim's lock wait is the longer one of {@link
   * EngineSettings#confirmWait}: {@link TransactionalIdempotency} makes sure so that a bounded
   * key statement that gave up waited on a concurrent attempt's row, and not on a lock that any
   * insert can meet for a moment (see {@link RoundEnd.ClaimGaveUp}).
   *
   * @param onEnsureClaimed what the effect's {@link dev.idem.core.EffectContext#ensureClaimed()}
   *     runs, the key being the attempt's already (the transactional engine learns that the answer
   *     began to reach the client), or {@code null} for nothing
   * @return {@link RoundEnd.Answered} with the outcome, or, only in a caller's transaction, {@link
   *     RoundEnd.ClaimGaveUp}; never another end
   */
  RoundEnd execute(Connection connection, IdempotentRequest request, Effect effect, boolean confirming,
      @Nullable Runnable onEnsureClaimed) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    Dialect dialect = Dialect.of(connection);
    KeyTable.Statements sql = statementsFor(connection, dialect);
    boolean ownTransaction = keys.autoCommit(connection);
    keys.ensureSchema(connection, dialect, ownTransaction);
    // Fast path for replays: one primary-key read that takes no lock. A replay must not lock the
    // row: in a caller's transaction that lock would be held to its end, so replays of the same
    // keys in other orders would deadlock. Skipped inside a caller's transaction on SQLite
    // (KeyTable.readsReplaysOutsideTransactions), where a read before the claim's write could hit a
    // stale snapshot; SQLite has a single writer anyway.
    // On PostgreSQL, where the claim comes first, the read travels with the claim instead
    // (KeyTableSql.lookupAndClaim): one round trip fewer for a create, one more (the end of the
    // transaction) for a replay in a transaction of Idem's own.
    // Not on a read-only connection: its transaction refuses the claim's INSERT even when it would
    // insert nothing, so a replay, which needs no write, would fail.
    boolean lookupWithClaim = sql.sql.lookupAndClaim != null && (!ownTransaction || strategy == JdbcIdempotency.Strategy.CLAIM_FIRST)
        && !readOnly(connection);
    if (!lookupWithClaim && (ownTransaction || !KeyTable.readsReplaysOutsideTransactions(dialect))) {
      Outcome stored = keys.answerIfLive(connection, sql, request);
      if (stored != null) {
        return new RoundEnd.Answered(stored);
      }
    }
    if (!ownTransaction) {
      return joined.run(connection, dialect, sql, request, effect,
          confirming ? settings.confirmWait(sql) : settings.claimWait(sql), onEnsureClaimed);
    }
    if (onEnsureClaimed != null) {
      // A runner whose connection was left in auto-commit: the rounds are Idem's own, whose
      // contexts run nothing on ensureClaimed; the effect's context is given the hook instead.
      Effect given = effect;
      effect = context -> given.run(EffectContext.ofTransaction(context.connection(), onEnsureClaimed));
    }
    return new RoundEnd.Answered(inOwnTransactions(connection, dialect, sql, request, effect));
  }

  /** @return the statements for the connection's database (MariaDB's on a MariaDB server, when the claim is bounded) */
  private KeyTable.Statements statementsFor(Connection connection, Dialect dialect) {
    return keys.statementsFor(connection, dialect, boundedClaims);
  }

  /**
   * Rounds in transactions Idem owns, on the one round runner ({@link ConflictRetry#rounds}): in
   * the strategy's order, switching from {@link JdbcIdempotency.Strategy#KEY_LAST} to {@link JdbcIdempotency.Strategy#CLAIM_FIRST}
   * when the effect met racing duplicates in its locks, and recording a PostgreSQL effect's client
   * error alone after the SQL error it caught aborted its transaction.
   */
  private Outcome inOwnTransactions(
      Connection connection, Dialect dialect, KeyTable.Statements sql, IdempotentRequest request, Effect effect) {
    Effect[] current = {effect};
    Optional<Outcome> outcome = rounds(ownOrder, connection, dialect, sql, request, current);
    if (outcome.isPresent()) {
      return outcome.get();
    }
    // TakeKeyFirst (key-last rounds only): the claim-first rounds that follow have their own count.
    return rounds(claimFirst, connection, dialect, sql, request, current)
        .orElseThrow(() -> new IllegalStateException("a claim-first round asked to take the key first"));
  }

  /** @return the outcome of the order's rounds, or empty when a round asked to take the key first */
  private static Optional<Outcome> rounds(OwnTransactionRound order, Connection connection, Dialect dialect, KeyTable.Statements sql,
      IdempotentRequest request, Effect[] current) {
    return ConflictRetry.roundsUnchecked(round -> next(order.round(connection, dialect, sql, request, current[0]), current));
  }

  /**
   * @param current the effect of the next round, replaced by one that only answers after {@link RoundEnd.EffectAborted}
   * @return the round runner's value for how a round ended (empty: take the key first)
   */
  private static Round<Optional<Outcome>> next(RoundEnd end, Effect[] current) {
    if (end instanceof RoundEnd.Answered answered) {
      return Round.done(Optional.of(answered.outcome()));
    }
    if (end instanceof RoundEnd.RolledBack rolledBack) {
      return Round.again(rolledBack.ifLast());
    }
    if (end instanceof RoundEnd.TakeKeyFirst) {
      ConflictRetry.pause(0);
      return Round.done(Optional.empty());
    }
    RoundEnd.EffectAborted aborted = (RoundEnd.EffectAborted) end;
    EffectFailedException refusal = EngineSettings.abortedAnswerRefused(aborted.response(), aborted.aborted());
    if (aborted.response().status() < 400) {
      throw refusal; // an answer that describes writes that did not happen
    }
    // The effect's client error is its final answer: the next round writes nothing and records it alone.
    StoredResponse answer = aborted.response();
    current[0] = c -> answer;
    return Round.again(refusal);
  }

  /**
   * {@link JdbcIdempotency.Strategy#KEY_LAST} in a transaction that a {@link TransactionRunner} opened for {@link
   * TransactionalIdempotency}, which has already looked for a live record ({@link
   * KeyLast#inRunnersTransaction}).
   *
   * @return how the work ended; anything but a stored {@link RoundEnd.Answered} outcome asks the
   *     caller to roll the runner's transaction back
   */
  RoundEnd runThenRecord(Connection connection, IdempotentRequest request, Effect effect, Runnable onClaimed) {
    Dialect dialect = Dialect.of(connection);
    KeyTable.Statements sql = statementsFor(connection, dialect);
    keys.ensureSchema(connection, dialect, false);
    return keyLast.inRunnersTransaction(connection, dialect, sql, request, effect, onClaimed);
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
