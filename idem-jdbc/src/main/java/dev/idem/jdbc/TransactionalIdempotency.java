package dev.idem.jdbc;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemException;
import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.ConflictRetry.Round;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

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
 *       answer stored on every database, PostgreSQL included (see {@link JdbcIdempotency}).
 *   <li>An effect whose response is a record without its body ({@link StoredResponse#bodyStored()}
 *       {@code false}, an answer too long to keep that already went to the client) is stored or
 *       released by the response policy like any other.
 * </ul>
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
  /** Whether attempts run in key-last order: the key table's strategy, read once, at construction. */
  private final boolean keyLast;
  /** Duplicates that find the key busy: met in memory in this engine, or waiting on another's. */
  private final InFlightAttempts duplicates;
  private volatile @Nullable Boolean lookupFirst;
  private volatile boolean schemaPrepared;

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
    this.keyLast = keys.strategy() == JdbcIdempotency.Strategy.KEY_LAST;
    this.duplicates = new InFlightAttempts(this::attemptOnce, this::lookOutside, this.inProgress, this.listener);
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

  /**
   * {@link JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)} on a connection in
   * auto-commit mode: the same attempt as {@link #attempt}, in transactions Idem begins and ends on
   * that connection ({@link OwnTransactionRunner}), its result given as that method's outcome or
   * exception.
   */
  static Outcome executeInOwnTransactions(JdbcIdempotency keys, OwnTransactionRunner runner, IdempotentRequest request,
      Effect effect) {
    TransactionalIdempotency engine = new TransactionalIdempotency(keys, runner, IdemListener.NONE, InProgressPolicy.failFast());
    engine.schemaPrepared = keys.schemaReady(runner.dialect());
    AttemptResult result = engine.attemptOnce(request, effect);
    Optional<Outcome> outcome = result.outcome();
    if (outcome.isPresent()) {
      return outcome.get();
    }
    RuntimeException failure = result.failure().orElseThrow(() -> new IllegalStateException("a result without an outcome: " + result));
    if (failure.getCause() instanceof EffectFailedException refused && failure instanceof IdemStoreException) {
      // The answer was refused (a success after an SQL error that aborted the transaction): the
      // method's own exception for it.
      throw refused;
    }
    throw failure;
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
    AttemptResult result;
    try {
      if (keys.claimLockWait() != null) {
        result = duplicates.attempt(request, effect);
      } else {
        result = attemptOnce(request, effect);
        if (result.kind() == AttemptResult.Kind.IN_PROGRESS && !inProgress.maxWait().isZero()) {
          result = duplicates.waitForFirstAttempt(request, effect, result);
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
    AttemptProgress progress = new AttemptProgress(effect);
    IdemListener.Attempt observed = IdemListener.start(listener, request, IdemListener.TRANSACTIONAL_MODE);
    AttemptResult result;
    try {
      // The caller's transaction (or, on a connection in auto-commit, Idem's own ones on it)
      RoundEnd end = claimFirstIn(connection, () -> {}, request, progress, false, false, progress::claimed);
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

  /** One attempt, in the order of the key table engine's {@link JdbcIdempotency#strategy()}. */
  private AttemptResult attemptOnce(IdempotentRequest request, Effect effect) {
    try {
      prepareSchema();
    } catch (IdemException e) {
      return AttemptFailures.beforeEffect(e);
    }
    return keyLast ? attemptKeyLast(request, effect) : attemptClaimFirst(request, effect, false);
  }

  /**
   * {@link JdbcIdempotency.Strategy#KEY_LAST}: a replay is one primary-key read on a connection in
   * auto-commit, before any transaction; a create runs the effect and then inserts the key's row
   * completed, in one transaction of the runner ({@link JdbcIdempotency#runThenRecord(Connection,
   * IdempotentRequest, Effect, Runnable)}). A duplicate that met a winner's record
   * rolls back, effect included, and reads the winner's answer in the next round.
   */
  private AttemptResult attemptKeyLast(IdempotentRequest request, Effect effect) {
    return ConflictRetry.roundsUnchecked(round -> {
      Optional<Outcome> stored;
      try {
        stored = lookOutside(request);
      } catch (IdemException e) {
        return Round.done(AttemptFailures.beforeEffect(e));
      }
      if (stored.isPresent()) {
        return Round.done(AttemptResult.of(stored.get()));
      }
      AttemptProgress progress = new AttemptProgress(effect);
      RoundEnd end;
      try {
        end = transactions.inTransaction((connection, transaction) -> {
          RoundEnd e = keys.runThenRecord(connection, request, progress, progress::claimed, own(transaction));
          progress.end = e;
          if (!(e instanceof RoundEnd.Answered answered) || !answered.outcome().stored()) {
            // A released answer takes the effect's writes with it; so does a key another attempt took.
            transaction.setRollbackOnly();
          }
          progress.returned = true;
          return e;
        });
      } catch (RuntimeException e) {
        if (progress.end != null && !(progress.end instanceof RoundEnd.Answered)) {
          // The work asked for the rollback; ending the transaction failed (the connection is
          // gone), so nothing committed: the round ends as the work said.
          end = progress.end;
        } else {
          return keyLastFailed(e, progress, request, effect);
        }
      }
      if (end instanceof RoundEnd.RolledBack rolledBack) {
        // A winner's record refused the key; rolled back, the next round's read answers from it.
        return round < ConflictRetry.MAX_ATTEMPTS - 1 ? Round.again(rolledBack.ifLast())
            : Round.done(AttemptResult.storeFailed(rolledBack.ifLast()));
      }
      if (end instanceof RoundEnd.TakeKeyFirst takeKeyFirst) {
        // The bounded insert gave up on a lock, and the runner rolled back, effect included.
        // The lock may be a concurrent attempt's row of this key, or one that any insert meets
        // for a moment (a relation extension lock while 16 clients grow the table, a table lock
        // of DDL): was, 4 of 50,000 creates with fresh keys answered in progress. Take the key
        // first, waiting longer once (EngineSettings#confirmWait): a duplicate's row is still
        // held and the attempt is answered in progress; any other lock has gone, and the create
        // runs once. Only on this path: a create that meets no lock pays nothing.
        return Round.done(attemptClaimFirst(request, effect, takeKeyFirst.confirmWait()));
      }
      if (end instanceof RoundEnd.EffectAborted aborted) {
        // PostgreSQL: an SQL error the effect caught aborted the transaction. A client error is
        // its final answer, recorded alone; any other answer describes writes that are gone.
        if (isStoredClientError(aborted.response())) {
          return Round.done(answerAlone(request, aborted.response()));
        }
        return Round.done(AttemptResult.rolledBack(new IdemStoreException("the effect answered " + aborted.response().status()
            + " after an SQL error that aborted its transaction; nothing was committed or stored",
            EngineSettings.abortedAnswerRefused(aborted.response(), aborted.aborted())), false));
      }
      Outcome o = Objects.requireNonNull(((RoundEnd.Answered) end).outcome(), "outcome");
      if (!o.stored() && !progress.claimed) {
        // An answer that is not stored (a 5xx) may be the effect's failure on a racing winner's
        // rows, caught and answered: the winner's record, if any, answers instead.
        AttemptResult winner = winnerQuietly(request);
        if (winner != null) {
          return Round.done(winner);
        }
      }
      return Round.done(AttemptResult.of(o));
    });
  }

  /** A key-last round whose runner's transaction failed: how far the attempt got says what it means. */
  private Round<AttemptResult> keyLastFailed(RuntimeException e, AttemptProgress progress, IdempotentRequest request, Effect effect) {
    if (ConflictRetry.conflictIn(e) != null && !progress.claimed) {
      // A deadlock or serialization failure (SQLState class 40), most likely against a racing
      // duplicate still running: the database undid this run. Running the effect first again
      // would meet the same racers in the same locks; claiming first waits for the winner.
      return Round.done(attemptClaimFirst(request, effect));
    }
    if (progress.started && !progress.answered && !progress.claimed) {
      // The effect failed. A racing duplicate's effect can fail on the winner's rows (a unique
      // constraint of its own): rolled back now, the winner's record, if any, answers.
      AttemptResult winner = winnerQuietly(request);
      if (winner != null) {
        return Round.done(winner);
      }
    }
    return Round.done(failed(e, progress, request));
  }

  /**
   * Reads the request's live record on a connection of its own, outside any transaction.
   *
   * @throws IdempotencyKeyReusedException, RequestInProgressException, IdemStoreException as {@link JdbcIdempotency#replay}
   */
  private Optional<Outcome> lookOutside(IdempotentRequest request) {
    try (Connection connection = transactions.dataSource().getConnection()) {
      return keys.replay(connection, request);
    } catch (SQLException e) {
      throw new IdemStoreException("cannot get a connection to look for a stored response: " + e.getMessage(), e);
    }
  }

  /** @return the answer a winner's live record gives (replay, key reused, in progress), or {@code null} if none or unreadable */
  private @Nullable AttemptResult winnerQuietly(IdempotentRequest request) {
    try {
      Optional<Outcome> stored = lookOutside(request);
      return stored.map(AttemptResult::of).orElse(null);
    } catch (IdempotencyKeyReusedException | RequestInProgressException e) {
      return AttemptFailures.beforeEffect(e);
    } catch (RuntimeException e) {
      return null; // the original failure is the one to report
    }
  }

  /**
   * {@link JdbcIdempotency.Strategy#CLAIM_FIRST} in the runner's transactions, on the one round
   * runner ({@link ConflictRetry#rounds}): a deadlock or serialization failure (SQLState class 40,
   * MySQL/MariaDB 1213) rolled the runner's whole transaction back, effect included, wherever it
   * surfaced (the claim, the effect, the COMMIT), so nothing happened and the attempt runs again
   * after a short random pause; its claim then meets the winner's record and replays it, or runs
   * once. On a Galera cluster that is how a duplicate sent to another node at the same time loses:
   * its transaction fails certification at the COMMIT against the winner's. The last round's
   * failure is answered as any other ({@link #failed}).
   */
  private AttemptResult attemptClaimFirst(IdempotentRequest request, Effect effect) {
    return attemptClaimFirst(request, effect, false);
  }

  /**
   * @param confirming whether the claim confirms a bounded key statement's give-up: it waits
   *     {@link EngineSettings#confirmWait}. Otherwise a bounded claim that gave up ({@link
   *     RoundEnd.ClaimGaveUp}) is confirmed so before the attempt is answered in progress.
   */
  private AttemptResult attemptClaimFirst(IdempotentRequest request, Effect effect, boolean confirming) {
    boolean lookedUp;
    try {
      lookedUp = lookupFirst();
      if (lookedUp) {
        // SQLite: replays first, on a connection of their own in auto-commit, one primary-key read
        // without a lock; inside the transaction the claim would take the single write lock just
        // to find the stored response. Elsewhere JdbcIdempotency reads first inside the transaction.
        Optional<Outcome> stored = lookOutside(request);
        if (stored.isPresent()) {
          return AttemptResult.of(stored.get());
        }
      }
    } catch (IdemException e) {
      return AttemptFailures.beforeEffect(e);
    }
    return ConflictRetry.roundsUnchecked(round -> {
      AttemptProgress progress = new AttemptProgress(effect);
      RoundEnd end;
      try {
        end = transactions.inTransaction((connection, transaction) -> {
          RoundEnd e = claimFirstIn(connection, transaction, request, progress, confirming, lookedUp, progress::claimed);
          progress.end = e;
          if (!(e instanceof RoundEnd.Answered answered) || !answered.outcome().replayed() && !answered.outcome().stored()) {
            // A released answer takes the effect's writes with it; a claim that gave up, its wait.
            transaction.setRollbackOnly();
          }
          progress.returned = true;
          return e;
        });
      } catch (RuntimeException e) {
        if (progress.end instanceof RoundEnd.ClaimGaveUp) {
          // Ending the rolled-back transaction failed (the connection is gone): nothing committed,
          // and the round ends as the claim said.
          end = progress.end;
        } else {
          if (ConflictRetry.conflictIn(e) != null && !progress.claimed && round < ConflictRetry.MAX_ATTEMPTS - 1) {
            return Round.again(e); // rolled back by the database: run the attempt again
          }
          return Round.done(failed(e, progress, request));
        }
      }
      if (end instanceof RoundEnd.ClaimGaveUp) {
        // The bounded claim gave up on some lock, rolled back: confirm once with the longer wait
        // that a duplicate's row outlasts and a momentary lock does not (see KEY_LAST above).
        return Round.done(confirming ? AttemptFailures.gaveUp(request) : attemptClaimFirst(request, effect, true));
      }
      return Round.done(AttemptResult.of(((RoundEnd.Answered) Objects.requireNonNull(end, "end")).outcome()));
    });
  }

  /**
   * The claim-first work in a transaction of the runner ({@link TransactionalRounds#claimFirst}).
   * A runner whose connection was left in auto-commit (it holds no transaction) gets transactions
   * of Idem's own on it instead.
   */
  private RoundEnd claimFirstIn(Connection connection, TransactionRunner.Transaction transaction, IdempotentRequest request,
      Effect effect, boolean confirming, boolean lookedUp, @Nullable Runnable onEnsureClaimed) {
    OwnTransactionRunner.OwnTransaction own = own(transaction);
    if (own == null && keys.autoCommit(connection)) {
      Effect given = effect;
      return new RoundEnd.Answered(keys.execute(connection, request,
          onEnsureClaimed == null ? given : context -> given.run(EffectContext.ofTransaction(context.connection(), onEnsureClaimed))));
    }
    return keys.claimFirst(connection, request, effect, confirming, lookedUp, onEnsureClaimed, own);
  }

  /** @return the transaction as Idem's own ({@link OwnTransactionRunner}), or {@code null} for a runner's */
  private static OwnTransactionRunner.@Nullable OwnTransaction own(TransactionRunner.Transaction transaction) {
    return transaction instanceof OwnTransactionRunner.OwnTransaction own ? own : null;
  }

  /**
   * What a runner's transaction that failed means, in either order, by how far the attempt got.
   *
   * @throws RuntimeException {@code e} itself when it is the effect's own failure, or the caller's
   *     error (see {@link #beforeEffect})
   */
  private AttemptResult failed(RuntimeException e, AttemptProgress progress, IdempotentRequest request) {
    if (progress.answered) {
      StoredResponse response = progress.response;
      if (progress.returned && response != null && AttemptFailures.markedRollbackOnly(e) && isStoredClientError(response)) {
        // Something the effect called (a JPA repository whose flush hit a unique constraint)
        // marked the transaction rollback-only, and the effect answered that failure as a client
        // error (409 email already registered): that answer is what it meant, and its writes,
        // rolled back, are not part of it. Record the answer alone, as after an SQL error that
        // aborted a PostgreSQL transaction.
        return answerAlone(request, response);
      }
      // The effect returned; whatever failed afterwards (storing the response, releasing the
      // key, the commit itself) rolled its writes back, or, at the commit, may have: its answer
      // must not reach the client as if they had happened.
      return AttemptFailures.afterAnswer(e, progress.returned, request.key());
    }
    if (progress.started) {
      throw e; // the effect's own failure
    }
    return AttemptFailures.beforeEffect(e);
  }

  /**
   * Records {@code answer} for the request in a new transaction, without running the effect: the
   * claim again, then the answer. A duplicate that claimed the key between the two transactions
   * ran the effect itself, and its answer is replayed instead.
   */
  private AttemptResult answerAlone(IdempotentRequest request, StoredResponse answer) {
    boolean[] returned = new boolean[1];
    try {
      Outcome outcome = transactions.inTransaction((connection, transaction) -> {
        RoundEnd end = keys.claimFirst(connection, request, c -> answer, false, false, null, own(transaction));
        if (!(end instanceof RoundEnd.Answered answered)) {
          transaction.setRollbackOnly();
          throw new RequestInProgressException(request.key(), java.time.Duration.ofSeconds(1));
        }
        returned[0] = true;
        return answered.outcome();
      });
      return AttemptResult.of(Objects.requireNonNull(outcome, "outcome"));
    } catch (RuntimeException e) {
      if (e instanceof IdemException && !returned[0]) {
        return AttemptFailures.beforeEffect(e); // the store failed, or the key was reused meanwhile
      }
      return AttemptFailures.afterAnswer(e, returned[0], request.key());
    }
  }

  /** @return whether the answer is a client error (4xx) that the response policy stores */
  private boolean isStoredClientError(StoredResponse response) {
    return response.status() >= 400 && response.status() < 500 && keys.responsePolicy().shouldStore(response);
  }

  /**
   * Before the first attempt: the key table checked, or created if the key table's engine allows it,
   * on a connection of its own in auto-commit (was: an engine on MariaDB whose table did not exist
   * yet failed every attempt, since MySQL DDL cannot run inside the attempt's transaction). Done once;
   * a race does it twice, harmlessly.
   *
   * @throws IdemStoreException if no connection can be had, or the table is refused or cannot be made
   */
  private void prepareSchema() {
    if (schemaPrepared) {
      return;
    }
    try (Connection connection = transactions.dataSource().getConnection()) {
      if (!connection.getAutoCommit()) {
        connection.setAutoCommit(true);
      }
      keys.prepareSchemaOutsideTransactions(connection);
    } catch (SQLException e) {
      throw new IdemStoreException("cannot get a connection to prepare the key table: " + e.getMessage(), e);
    }
    schemaPrepared = true;
  }

  /**
   * Whether replays are looked up before the transaction: in a runner's, on SQLite only, where the
   * claim-first work skips its own lookup inside a transaction; in Idem's own, wherever the lookup
   * does not travel with the claim (all but PostgreSQL), as a replay then needs no transaction.
   * Decided on the first attempt that can get a connection; a race decides it twice, the same way.
   */
  private boolean lookupFirst() {
    Boolean known = lookupFirst;
    if (known == null) {
      try (Connection connection = transactions.dataSource().getConnection()) {
        known = transactions instanceof OwnTransactionRunner own ? !keys.lookupWithClaim(connection, own.dialect())
            : KeyTable.readsReplaysOutsideTransactions(Dialect.detect(connection));
      } catch (SQLException e) {
        throw new IdemStoreException("cannot get a connection: " + e.getMessage(), e);
      }
      lookupFirst = known;
    }
    return known;
  }
}
