package dev.idem.jdbc;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.ConflictRetry.Round;
import java.sql.Connection;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Transactional mode as an {@link IdempotencyEngine}: each attempt runs in one transaction of a
 * {@link TransactionRunner}, in which the key's record, everything the effect writes on the
 * transaction's connection ({@link EffectContext#connection()}, or, with the Spring runner,
 * whatever joins Spring's transaction) and the stored response commit together, so a create costs
 * one write transaction and a failure anywhere leaves nothing behind. The key table is {@link
 * JdbcIdempotency}'s, and so is the order of the writes ({@link JdbcIdempotency#strategy()}):
 *
 * <ul>
 *   <li>{@link JdbcIdempotency.Strategy#CLAIM_FIRST}: the claim, the effect, the completion of the
 *       claim; a duplicate's claim meets the first attempt's row, so the effect runs once in all.
 *   <li>{@link JdbcIdempotency.Strategy#KEY_LAST}: a replay is one primary-key read on a connection
 *       in auto-commit, before any transaction; a create runs the effect, then inserts the key's row
 *       completed, one key statement in all. A concurrent duplicate may run its effect too; its
 *       insert meets the winner's row (waiting for its transaction to end), and it rolls back, effect
 *       included, and replays the winner. An effect whose answer is about to stream to the client
 *       claims the key first ({@link EffectContext#ensureClaimed()}); a duplicate that meets that
 *       claim rolls back and replays too, even if its effect caught the refusal and answered. An
 *       effect that fails, or answers a status that is not stored, while a winner's record appeared
 *       is answered from that record. A deadlock or serialization failure of a duplicate (SQLState
 *       class 40) runs it again in claim-first order.
 * </ul>
 *
 * <p>In both orders:
 *
 * <ul>
 *   <li>A retry of a completed request is answered from one primary-key read without a lock: on
 *       SQLite on a connection in auto-commit mode before any transaction begins (inside it, the
 *       claim would wait for the single write lock), elsewhere as the transaction's first statement.
 *       The dialect is detected once, on the first attempt that gets a connection.
 *   <li>A concurrent duplicate blocks on the key's row until the first transaction ends, then
 *       replays it (or, if it rolled back, runs itself); with {@link
 *       JdbcIdempotency.Builder#claimLockWait} its claim gives up instead, holding the connection no
 *       longer than that bound (a give-up is confirmed once, waiting up to 100 ms, before it is
 *       answered: the bound also ends waits for locks that are not the key's row), and the {@link InProgressPolicy} answers {@link
 *       AttemptResult.Kind#IN_PROGRESS} at once or attempts again, without a connection between
 *       attempts, up to its wait. A duplicate of an attempt running in this engine (this JVM), on
 *       every database SQLite included, reads the key's record once outside any transaction (a
 *       completed record is replayed, so concurrent replays of one key are all replays) and
 *       otherwise never runs its effect: in progress at once, or a wait in memory for that attempt
 *       to end, then the replay.
 *   <li>A response that the response policy does not store (5xx, 408, 425, 429) rolls the whole
 *       transaction back, the effect's writes included: {@link AttemptResult.Kind#RELEASED}.
 *   <li>An effect that throws rolls everything back; the exception reaches the caller.
 *   <li>A deadlock or serialization failure (SQLState class 40, MySQL/MariaDB 1213) that rolled
 *       the runner's transaction back, at the claim, in the effect or at the commit, runs the
 *       attempt again after a short random pause, up to five rounds in all; its claim then meets a
 *       winner's record and replays it. That is how a duplicate that reached another Galera node at
 *       the same time is answered: its transaction fails certification against the winner's. An
 *       answer that began to stream to the client is never run again.
 *   <li>If anything fails after the effect returned (storing the response, the commit), the
 *       transaction rolls back and the result says what a retry can do ({@link SqlFailure}): a
 *       store failure, or a deadlock or serialization failure at the commit in the last round, is {@link
 *       AttemptResult.Kind#ROLLED_BACK}; a lost commit acknowledgement is {@link
 *       AttemptResult.Kind#OUTCOME_UNKNOWN}; a failure of the request itself (its data refused at the
 *       commit, a success answered after a transaction was marked rollback-only, a success
 *       answered after an SQL error that aborted the transaction) is {@link
 *       AttemptResult.Kind#REQUEST_FAILED}.
 *   <li>An effect that answers a client error (4xx that the response policy stores) after
 *       something it called marked the transaction rollback-only (a JPA repository whose flush
 *       hit a unique constraint, caught and answered as {@code 409}) has its answer stored without
 *       its rolled-back writes, in a second transaction that claims the key again and runs
 *       nothing; a retry replays it.
 *   <li>An effect that answers an SQL error it caught (a 409 for a taken e-mail address) has its
 *       answer stored on every database, PostgreSQL included (<b>SQL errors the effect catches</b>, below).
 *   <li>An effect whose response is a record without its body ({@link StoredResponse#bodyStored()}
 *       {@code false}, an answer too long to keep that already went to the client) is stored or
 *       released by the response policy like any other.
 * </ul>
 *
 * <p><b>Transactions.</b> The engine runs the same rounds in the transactions of its {@link
 * TransactionRunner} and, for {@link JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)}
 * on a connection in auto-commit mode, in transactions it begins and ends itself on that
 * connection; there the effect's connection refuses {@code commit}, {@code rollback()} and {@code
 * setAutoCommit}, and the last key statement carries the {@code COMMIT} where the database allows
 * it. In a transaction a caller already has open ({@link #attemptIn}, {@code execute} on a
 * connection with {@code getAutoCommit() == false}) it claims first, runs one round, and leaves the
 * commit to the caller.
 *
 * <p><b>SQL errors the effect catches.</b> An effect may catch an SQL error of its own (a unique
 * violation, say) and answer it ({@code 409 email already registered}); that answer is returned and
 * stored on every database. On SQLite, MySQL and MariaDB the failed statement alone is undone and
 * the rest of the effect commits with the answer. On PostgreSQL the error aborts the whole
 * transaction (SQLState 25P02 for every later statement), so none of the effect's writes can
 * commit: a client error (4xx) is then stored without them, which is what the effect meant by it;
 * any other answer (a 2xx would describe writes that did not happen) is refused with {@link
 * EffectFailedException}, nothing stored. A failure answer that the response policy does not store
 * (the application's own 503, say) is returned as it is. After a claim, a savepoint that the claim's
 * statement sets in the same round trip ({@code idem_before_effect}) is rolled back to; in key-last
 * order, which sets none, the answer is recorded in a second transaction without running the
 * effect again. A call of Idem made inside an effect, on the same thread, releases the savepoints
 * it set before it returns, so that the outer call's rollback still reaches its own. An effect that
 * wants to keep its other writes past an error on PostgreSQL sets a savepoint of its own around the
 * statement that may fail.
 *
 * <p><b>Round trips.</b> On PostgreSQL the lookup that answers replays and the claim travel in one
 * round trip (with the savepoint; on a connection marked {@linkplain Connection#isReadOnly()
 * read-only} the lookup goes alone, since a read-only transaction refuses the claim's INSERT even
 * when it would insert nothing), and in a transaction Idem owns the last key statement (the
 * completion, or in key-last order the completed record) carries the {@code COMMIT}, and fails
 * before it when it wrote no row, so nothing commits without its key. A create in Idem's own
 * transaction is then the effect's own statements and two round trips, in either order (the
 * hand-written key-last transaction has the same count: its key row, and the COMMIT); a runner
 * commits with a round trip of its own. Elsewhere each statement is a round trip. {@code
 * StatementCountTest} holds these counts and {@code docs/reports/benchmarks.md} reports them per
 * dialect.
 *
 * <p>Only for effects whose writes go to this DataSource; one that calls a payment API or sends
 * mail belongs in lease mode. The {@link IdemListener} is told of every attempt's result. Immutable
 * and thread-safe.
 */
public final class TransactionalIdempotency implements IdempotencyEngine {

  private final JdbcIdempotency keys;
  private final TransactionRunner transactions;
  private final IdemListener listener;
  private final InProgressPolicy inProgress;
  /** The rounds of an attempt in the runner's transactions. */
  private final AttemptRounds rounds;
  /** Duplicates that find the key busy: met in memory in this engine, or waiting on another's. */
  private final InFlightAttempts duplicates;

  /**
   * The engine with {@link InProgressPolicy#failFast()}: a duplicate whose claim gives up (only
   * with {@link JdbcIdempotency.Builder#claimLockWait}) is answered at once.
   *
   * @param keys the key table's engine, never {@code null}
   * @param transactions runs the attempts' transactions, never {@code null}
   * @param listener told of every attempt's result, never {@code null} ({@link IdemListener#NONE})
   * @throws NullPointerException if an argument is {@code null}
   */
  public TransactionalIdempotency(JdbcIdempotency keys, TransactionRunner transactions, IdemListener listener) {
    this(keys, transactions, listener, InProgressPolicy.failFast());
  }

  /**
   * @param keys the key table's engine, never {@code null}
   * @param transactions runs the attempts' transactions, never {@code null}
   * @param listener told of every attempt's result, never {@code null} ({@link IdemListener#NONE})
   * @param inProgress what a duplicate does when its claim met a concurrent attempt's row and gave
   *     up ({@link JdbcIdempotency.Builder#claimLockWait}): {@link AttemptResult.Kind#IN_PROGRESS}
   *     at once (HTTP 409 with {@code Retry-After}, as the IETF Idempotency-Key draft, section
   *     2.6, recommends for a request still being processed), or attempts again outside any
   *     transaction, holding no connection between attempts (pauses from 10 ms doubling to 250 ms),
   *     until the first attempt's answer replays or {@link InProgressPolicy#maxWait()} has passed.
   *     Without a claim bound the claim itself waits on the row, and this policy never applies.
   * @throws NullPointerException if an argument is {@code null}
   */
  public TransactionalIdempotency(JdbcIdempotency keys, TransactionRunner transactions, IdemListener listener,
      InProgressPolicy inProgress) {
    this.keys = Objects.requireNonNull(keys, "keys");
    this.transactions = Objects.requireNonNull(transactions, "transactions");
    this.listener = Objects.requireNonNull(listener, "listener");
    this.inProgress = Objects.requireNonNull(inProgress, "inProgress");
    this.rounds = new AttemptRounds(keys, transactions);
    this.duplicates = new InFlightAttempts(rounds::attemptOnce, rounds::lookOutside, this.inProgress, this.listener);
  }

  /**
   * Transactional mode on plain JDBC ({@link DataSourceTransactionRunner}).
   *
   * @param keys the key table's engine, never {@code null}
   * @param dataSource the DataSource the effects write to, never {@code null}
   * @param listener told of every attempt's result, never {@code null} ({@link IdemListener#NONE})
   * @return a new engine
   * @throws NullPointerException if an argument is {@code null}
   */
  public static TransactionalIdempotency onDataSource(JdbcIdempotency keys, DataSource dataSource, IdemListener listener) {
    return new TransactionalIdempotency(keys, new DataSourceTransactionRunner(dataSource), listener);
  }

  /** @return the key table's engine */
  public JdbcIdempotency keys() {
    return keys;
  }

  /** @return the runner of the attempts' transactions, never {@code null} */
  public TransactionRunner transactions() {
    return transactions;
  }

  /** @return what a duplicate does whose claim gave up on a running attempt, never {@code null} */
  public InProgressPolicy inProgress() {
    return inProgress;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The effect gets the transaction's connection as {@link EffectContext#connection()}.
   */
  @Override
  public AttemptResult attempt(IdempotentRequest request, Effect effect) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    IdemListener.Attempt observed = IdemListener.start(listener, request, IdemListener.TRANSACTIONAL_MODE);
    Effect traced = IdemListener.keepingTraceContext(observed, effect);
    AttemptResult result;
    try {
      if (keys.claimLockWait() != null) {
        result = duplicates.attempt(request, traced);
      } else {
        result = rounds.attemptOnce(request, traced);
        if (result.kind() == AttemptResult.Kind.IN_PROGRESS && !inProgress.maxWait().isZero()) {
          result = duplicates.waitForFirstAttempt(request, traced, result);
        }
      }
    } catch (RuntimeException | Error e) {
      IdemListener.fail(observed, e);
      throw e;
    }
    IdemListener.end(listener, observed, request, result);
    return result;
  }

  /**
   * Runs {@code effect} in a transaction the caller already has open on {@code connection} (see
   * {@link JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)}): the caller commits
   * or rolls back, and must roll back when the result is not {@link AttemptResult.Kind#EXECUTED}
   * or {@link AttemptResult.Kind#REPLAYED}. The listener is told of the result.
   *
   * @param connection the caller's connection, in a transaction ({@code getAutoCommit() == false})
   * @param request the scope, key and fingerprint, never {@code null}
   * @param effect the operation, never {@code null}
   * @return what happened: executed, released, replayed, key reused, in progress, store failure
   * @throws RuntimeException the effect's own exception (a checked one wrapped in {@link
   *     EffectFailedException}), or an {@link IllegalStateException} for a caller's transaction
   *     that was already aborted
   */
  public AttemptResult attemptIn(Connection connection, IdempotentRequest request, Effect effect) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    IdemListener.Attempt observed = IdemListener.start(listener, request, IdemListener.TRANSACTIONAL_MODE);
    AttemptProgress progress = new AttemptProgress(IdemListener.keepingTraceContext(observed, effect));
    AttemptResult result;
    try {
      // The caller's transaction (or, on a connection in auto-commit, Idem's own ones on it)
      RoundEnd end = rounds.claimFirstIn(connection, () -> {}, request, progress, false, false, progress::claimed);
      result = end instanceof RoundEnd.Answered answered ? AttemptResult.of(answered.outcome()) : AttemptFailures.gaveUp(request);
    } catch (RuntimeException e) {
      if (progress.answered) {
        result = AttemptResult.rolledBack(e, !(e instanceof EffectFailedException));
      } else if (progress.started) {
        IdemListener.fail(observed, e);
        throw e;
      } else {
        result = AttemptFailures.beforeEffect(e);
      }
    } catch (Error e) {
      IdemListener.fail(observed, e);
      throw e;
    }
    IdemListener.end(listener, observed, request, result);
    return result;
  }

}
