package dev.idem.jdbc;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.IdemException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.ConflictRetry;
import dev.idem.jdbc.internal.ConflictRetry.Round;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The rounds of one transactional attempt, in the transactions of a {@link TransactionRunner}
 * (Idem's own, {@link OwnTransactionRunner}, among them): the order of the key table's {@link
 * JdbcIdempotency#strategy()}, picked once; the lookup outside any transaction; a round run again
 * after a deadlock or serialization failure; key-last falling back to claim-first; what a round's
 * end ({@link RoundEnd}) or a failed transaction means for the attempt's {@link AttemptResult}.
 * {@link TransactionalIdempotency} is its public face (listener, duplicates in memory); {@link
 * JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)} uses it directly. Thread-safe when
 * its runner is.
 */
final class AttemptRounds {

  private final JdbcIdempotency keys;
  private final TransactionRunner transactions;
  /** Whether attempts run in key-last order: the key table's strategy, read once, at construction. */
  private final boolean keyLast;
  private volatile @Nullable Boolean lookupFirst;
  private volatile boolean schemaPrepared;

  AttemptRounds(JdbcIdempotency keys, TransactionRunner transactions) {
    this.keys = keys;
    this.transactions = transactions;
    this.keyLast = keys.strategy() == JdbcIdempotency.Strategy.KEY_LAST;
  }

  /**
   * The rounds on Idem's own transactions, for {@link JdbcIdempotency#execute(Connection,
   * IdempotentRequest, Effect)} on a connection in auto-commit mode: the attempt's result given as
   * that method's outcome or exception.
   */
  static Outcome executeInOwnTransactions(JdbcIdempotency keys, OwnTransactionRunner runner, IdempotentRequest request,
      Effect effect) {
    AttemptRounds rounds = new AttemptRounds(keys, runner);
    rounds.schemaPrepared = keys.keyTable().schemaReady(runner.dialect());
    AttemptResult result = rounds.attemptOnce(request, effect);
    Optional<Outcome> outcome = result.outcome();
    if (outcome.isPresent()) {
      return outcome.get();
    }
    RuntimeException failure = result.failure().orElseThrow(() -> new IllegalStateException("a result without an outcome: " + result));
    if (failure.getClass() == IdemStoreException.class && failure.getCause() instanceof RuntimeException thrown
        && !(thrown instanceof TransactionFailedException)) {
      // The engine's "rolled back" wrapper (AttemptFailures) around what the round's work threw
      // after the effect answered: the answer refused (a success after an SQL error that aborted
      // the transaction), or a key statement's failure. The method throws that as it is; a
      // failed commit (TransactionFailedException) keeps the engine's more exact words.
      throw thrown;
    }
    throw failure;
  }

  /** One attempt, in the order of the key table engine's {@link JdbcIdempotency#strategy()}. */
  AttemptResult attemptOnce(IdempotentRequest request, Effect effect) {
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
          RoundEnd e = keys.rounds().runThenRecord(connection, request, progress, progress::claimed, own(transaction));
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
  Optional<Outcome> lookOutside(IdempotentRequest request) {
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
  RoundEnd claimFirstIn(Connection connection, TransactionRunner.Transaction transaction, IdempotentRequest request,
      Effect effect, boolean confirming, boolean lookedUp, @Nullable Runnable onEnsureClaimed) {
    OwnTransactionRunner.OwnTransaction own = own(transaction);
    if (own == null && keys.keyTable().autoCommit(connection)) {
      Effect given = effect;
      return new RoundEnd.Answered(keys.execute(connection, request,
          onEnsureClaimed == null ? given : context -> given.run(EffectContext.ofTransaction(context.connection(), onEnsureClaimed))));
    }
    return keys.rounds().claimFirst(connection, request, effect, confirming, lookedUp, onEnsureClaimed, own);
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
        RoundEnd end = keys.rounds().claimFirst(connection, request, c -> answer, false, false, null, own(transaction));
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
      // On MySQL and MariaDB a table cannot be created inside a transaction.
      keys.keyTable().ensureSchema(connection, Dialect.of(connection), true);
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
        known = transactions instanceof OwnTransactionRunner own ? !keys.rounds().lookupWithClaim(connection, own.dialect())
            : KeyTable.readsReplaysOutsideTransactions(Dialect.detect(connection));
      } catch (SQLException e) {
        throw new IdemStoreException("cannot get a connection: " + e.getMessage(), e);
      }
      lookupFirst = known;
    }
    return known;
  }
}
