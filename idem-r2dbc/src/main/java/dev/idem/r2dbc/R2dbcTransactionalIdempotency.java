package dev.idem.r2dbc;

import dev.idem.core.AttemptResult;
import dev.idem.core.EffectFailedException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.Outcome;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.ResponsePolicy;
import dev.idem.core.ResponseProtection;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.dialect.KeyTableSql;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.R2dbcRollbackException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * Idem's transactional mode on R2DBC, without blocking: the effect's writes, the key's record and
 * the stored response commit in one database transaction, or none of them does (PostgreSQL, and
 * MariaDB or MySQL). The reactive counterpart of idem-jdbc's {@code TransactionalIdempotency}, on
 * the same key table and statements ({@link KeyTableSql}): a key stored by one is replayed by the
 * other, and by {@link R2dbcLeaseStore} and {@code JdbcLeaseStore}.
 *
 * <h2>One attempt</h2>
 *
 * <p>{@link #attempt} works in a transaction its caller began, on that transaction's connection:
 *
 * <ol>
 *   <li>one plain read of the key's record: a live completed record with the same fingerprint is
 *       replayed, one with another fingerprint refused ({@link AttemptResult.Kind#KEY_REUSED}), a
 *       live lease-mode claim of another component sharing the table answered {@link
 *       AttemptResult.Kind#IN_PROGRESS}; nothing is written then;
 *   <li>otherwise the claim: an insert of the record "in progress" (PostgreSQL {@code INSERT ... ON
 *       CONFLICT DO UPDATE} of an expired record only; MySQL {@code INSERT IGNORE}, then a takeover
 *       of an expired record). A concurrent attempt with the same key holds its uncommitted record,
 *       so the database makes this insert wait for that transaction: after its commit the insert
 *       writes nothing and the record it committed is read and answered (a replay), after its
 *       rollback the insert goes ahead; a wait longer than the {@link Builder#inProgress} policy
 *       allows answers {@link AttemptResult.Kind#IN_PROGRESS}. Exactly one of any number of
 *       concurrent duplicates runs the effect;
 *   <li>the effect, given the connection (an application that writes through a framework joins
 *       the same transaction through the framework, see {@link R2dbcTransactions});
 *   <li>the answer: a response the {@link ResponsePolicy} stores (by default all but 5xx, 408,
 *       425, 429) completes the record in the same transaction ({@link AttemptResult.Kind#EXECUTED}),
 *       and the caller commits; any other ({@link AttemptResult.Kind#RELEASED}) must be rolled back
 *       by the caller with the effect's writes, so a retry runs the effect again.
 * </ol>
 *
 * <p><b>PostgreSQL and a caught SQL error.</b> On PostgreSQL a failed statement aborts the whole
 * transaction. So that an effect may catch its own constraint violation and answer it (a 409 that
 * is stored and replayed), the claim sets the savepoint {@value KeyTableSql#EFFECT_SAVEPOINT}; when
 * completing the record finds the transaction aborted, a client-error answer (4xx) is stored after a
 * rollback to that savepoint (without the effect's writes, which the error undid), and any other
 * answer, which would describe writes that did not happen, ends the attempt as {@link
 * AttemptResult.Kind#REQUEST_FAILED}.
 *
 * <p>{@link #execute} runs one attempt in a transaction of its own, from {@link R2dbcTransactions},
 * and ends it: the commit of an executed attempt, whose failure gives {@link
 * AttemptResult.Kind#OUTCOME_UNKNOWN} (the key and the effect committed together or not at all, so
 * a retry with the same key is safe), unless the database said it refused the writes at the commit
 * ({@link AttemptResult.Kind#REQUEST_FAILED}) or rolled them back ({@link
 * AttemptResult.Kind#ROLLED_BACK}); a rollback otherwise. A deadlock or serialization failure met
 * by the claim, before the effect ran, runs the whole attempt again in a new transaction, up to five
 * times in all. A claim whose lock wait was bounded below {@link #CONFIRM_WAIT} and gave up (the
 * fail-fast policy's) is confirmed before {@code execute} answers {@link
 * AttemptResult.Kind#IN_PROGRESS}: the attempt runs once more in a new transaction, its claim
 * waiting {@link #CONFIRM_WAIT} (on MariaDB, whose fail-fast claim does not wait at all, the same
 * statement once more, without a wait). PostgreSQL's {@code lock_timeout} ends any lock wait of the
 * insert, not only the wait for a duplicate's row: the relation extension lock while concurrent
 * inserts grow the table or an index, a table lock of DDL; those are held for moments, a
 * duplicate's row for its whole transaction, so a fresh key is created once and a real duplicate
 * is still answered in progress, after both waits (about 110 ms, on a second pooled connection).
 * idem-jdbc's {@code TransactionalIdempotency} confirms the same way, every bounded give-up (its
 * bound, the starter's 10 ms, is always below the confirmation's); a {@code waitUpTo} bound of
 * {@link #CONFIRM_WAIT} or more has waited long enough and is answered at once. {@link #attempt},
 * in its caller's transaction, answers the first give-up.
 *
 * <p><b>Failures.</b> A database failure before the effect ran gives {@link
 * AttemptResult.Kind#STORE_UNAVAILABLE} (a record that cannot be read back, {@link
 * AttemptResult.Kind#STORED_RESPONSE_UNREADABLE}); the completion's failure after it {@link
 * AttemptResult.Kind#ROLLED_BACK}, the caller then rolls back. The effect's own error, or an effect
 * that completes empty ({@link IllegalStateException}), ends the returned {@code Mono} with that
 * error, and the caller rolls back. Messages name a record by a hash, never by its principal or key.
 *
 * <p>Nothing blocks: every statement is a Reactor signal of the driver, and a duplicate waits on
 * the database's lock, not on a thread. Expiry: a completed record lives at least {@link
 * Builder#retention} after its completion and at most {@link JdbcIdempotency#EXPIRY_MARGIN} (or the
 * retention, if shorter) longer, by the database's clock. Immutable after {@link Builder#build()}, except for
 * the one-time "table created" mark; thread-safe.
 */
public final class R2dbcTransactionalIdempotency {

  /** Attempts in all of {@link #execute} when the claim meets a deadlock or serialization failure. */
  private static final int MAX_ATTEMPTS = 5;

  /**
   * How long a fail-fast claim waits for a lock before it answers "in progress": long enough for a
   * lock that any insert meets for an instant, far shorter than any effect (the starter's claim
   * wait on JDBC).
   */
  static final Duration FAIL_FAST_CLAIM_WAIT = Duration.ofMillis(10);

  /**
   * The wait of the claim that confirms a give-up of a claim bounded below it, before {@link
   * #execute} answers in progress (the class describes why); idem-jdbc's confirmation waits as long.
   */
  static final Duration CONFIRM_WAIT = Duration.ofMillis(100);

  /** Claims and reads in one attempt before giving up on a record that keeps changing. */
  private static final int MAX_ROUNDS = 5;

  private final ConnectionFactory factory;
  private final R2dbcKeyTable sql;
  private final Duration retention;
  private final ResponsePolicy policy;
  private final ResponseProtection protection;
  private final IdemListener listener;
  private final InProgressPolicy inProgress;
  /** Whether the claim's lock wait can be bounded: PostgreSQL, and MariaDB (not MySQL). */
  private final boolean boundable;

  private R2dbcTransactionalIdempotency(Builder b, Dialect dialect, boolean mariadb) {
    this.factory = b.factory;
    this.sql = new R2dbcKeyTable(dialect, mariadb, b.table, b.createSchema);
    this.retention = b.retention;
    this.policy = b.policy;
    this.protection = b.protection;
    this.listener = b.listener;
    this.inProgress = b.inProgress;
    this.boundable = dialect.equals(Dialect.postgresql()) || mariadb;
  }

  /**
   * @param factory the database of the key table, never {@code null}: the same as the effect's
   *     writes (its metadata chooses the dialect; a connection of its own creates the table)
   * @return a builder with table {@code idem_keys}, a retention of 24 hours, the default response
   *     policy, responses in clear and no listener
   * @throws NullPointerException if {@code factory} is {@code null}
   */
  public static Builder builder(ConnectionFactory factory) {
    return new Builder(factory);
  }

  /** @return the dialect chosen from the factory's metadata: PostgreSQL or MySQL */
  public Dialect dialect() {
    return sql.dialect;
  }

  /** @return the key table's name */
  public String table() {
    return sql.table;
  }

  /** @return how long a completed key is kept at least, after its completion */
  public Duration retention() {
    return retention;
  }

  /** @return the listener told of every attempt, never {@code null} */
  public IdemListener listener() {
    return listener;
  }

  /** @return the table, the dialect and the database, for logs */
  @Override
  public String toString() {
    return "R2dbcTransactionalIdempotency[table=" + sql.table + ", dialect=" + sql.dialect + ", database="
        + factory.getMetadata().getName() + "]";
  }

  /**
   * Runs one attempt in a transaction of its own and ends it, as the class describes; the listener
   * is told of the attempt (of a cancelled one, as failed with a {@link CancellationException}).
   * Subscribing starts it; cancelling rolls the transaction back (unless its commit was already
   * sent). Never blocks.
   *
   * @param transactions where the transaction comes from, never {@code null}; {@link
   *     R2dbcTransactions#of(ConnectionFactory)} for Idem's own on this engine's factory
   * @param request scope, key and fingerprint, never {@code null}
   * @param effect the operation, never {@code null}: given the transaction's connection, it returns
   *     the response to store (or, per the policy, to roll back with its writes); called at most once
   *     per transaction, and again only in a new transaction after the previous one rolled back
   * @return the result: {@link AttemptResult.Kind#EXECUTED} (committed), {@link
   *     AttemptResult.Kind#RELEASED} (rolled back), {@link AttemptResult.Kind#REPLAYED}, a refusal,
   *     {@link AttemptResult.Kind#OUTCOME_UNKNOWN} (the commit failed), {@link
   *     AttemptResult.Kind#ROLLED_BACK}, {@link AttemptResult.Kind#REQUEST_FAILED} or a store
   *     failure; or the effect's error after the rollback ({@link EffectFailedException} for a checked one)
   * @throws NullPointerException if an argument is {@code null}
   */
  public Mono<AttemptResult> execute(R2dbcTransactions transactions, IdempotentRequest request,
      Function<Connection, Mono<StoredResponse>> effect) {
    Objects.requireNonNull(transactions, "transactions");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    return Mono.defer(() -> {
      IdemListener.Attempt observed = IdemListener.startAsync(listener, request, IdemListener.TRANSACTIONAL_MODE);
      Function<Connection, Mono<StoredResponse>> traced = observed == IdemListener.Attempt.NONE ? effect
          : c -> effect.apply(c).map(response -> IdemListener.withTraceContext(observed, response));
      return schemaReady()
          .then(Mono.defer(() -> once(transactions, request, traced, false)))
          // a bounded claim gave up, rolled back before the effect ran: confirm it once, waiting longer
          .flatMap(result -> result.failure().orElse(null) instanceof ClaimGaveUp gaveUp && gaveUp.confirmable
              ? once(transactions, request, traced, true)
              : Mono.just(result))
          .map(R2dbcTransactionalIdempotency::plainInProgress)
          .retryWhen(Retry.backoff(MAX_ATTEMPTS - 1, Duration.ofMillis(2)).maxBackoff(Duration.ofMillis(50))
              .filter(ClaimConflict.class::isInstance)
              .onRetryExhaustedThrow((spec, signal) -> signal.failure()))
          .onErrorResume(ClaimConflict.class, e -> Mono.just(AttemptResult.storeFailed(failure("claim", request, e.conflict))))
          .onErrorResume(e -> e instanceof IdemStoreException, e -> Mono.just(AttemptResult.storeFailed((IdemStoreException) e)))
          .doOnNext(result -> IdemListener.end(listener, observed, request, result))
          .doOnError(error -> IdemListener.fail(observed, error))
          // a subscriber that goes away (a client that disconnected) ends the observation too
          .doOnCancel(() -> IdemListener.fail(observed, new CancellationException("the attempt was cancelled; its"
              + " transaction rolls back unless its commit was already sent")));
    });
  }

  /**
   * One transaction: the attempt, then the commit of an executed one, or the rollback.
   *
   * @param confirming whether the claim confirms a give-up ({@link #CONFIRM_WAIT})
   */
  private Mono<AttemptResult> once(R2dbcTransactions transactions, IdempotentRequest request,
      Function<Connection, Mono<StoredResponse>> effect, boolean confirming) {
    AtomicReference<@Nullable AttemptResult> worked = new AtomicReference<>();
    return transactions.inTransaction(c -> attemptIn(c, request, effect, confirming).doOnNext(worked::set),
            result -> result.kind() == AttemptResult.Kind.EXECUTED)
        .onErrorResume(error -> {
          AttemptResult result = worked.get();
          if (result == null) {
            return Mono.error(error); // the attempt's own failure, or the transaction did not begin
          }
          if (result.kind() == AttemptResult.Kind.EXECUTED) {
            return Mono.just(commitFailed(request, error));
          }
          return Mono.just(result); // a rollback that failed leaves nothing committed either
        });
  }

  /**
   * What a failed commit of an executed attempt means, as idem-jdbc tells it: the database refused
   * the effect's writes at the commit (SQLState class 22, 23 or 54: a deferred constraint, say),
   * the request's own failure ({@link AttemptResult.Kind#REQUEST_FAILED}); it rolled the transaction
   * back (class 40, or {@link R2dbcRollbackException}), {@link AttemptResult.Kind#ROLLED_BACK};
   * anything else (a connection lost during the commit), {@link AttemptResult.Kind#OUTCOME_UNKNOWN}.
   * The first {@link R2dbcException} of the cause chain is read: a framework's translation wraps it.
   */
  private AttemptResult commitFailed(IdempotentRequest request, Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof R2dbcRollbackException) {
        return AttemptResult.rolledBack(failure("commit (rolled back)", request, error), true);
      }
      if (t instanceof R2dbcException r) {
        String state = r.getSqlState() == null ? "" : r.getSqlState();
        if (state.startsWith("22") || state.startsWith("23") || state.startsWith("54")) {
          return AttemptResult.rolledBack(failure("commit (the database refused the request's writes)", request, error), false);
        }
        if (state.startsWith("40")) {
          return AttemptResult.rolledBack(failure("commit (rolled back)", request, error), true);
        }
        break;
      }
    }
    return AttemptResult.outcomeUnknown(new OutcomeUnknownException(request.key(), Duration.ofSeconds(1),
        OutcomeUnknownException.Phase.COMMIT, failure("commit", request, error)));
  }

  /**
   * One attempt in the caller's transaction, as the class describes. The caller began the
   * transaction on {@code connection} and ends it: it commits after {@link
   * AttemptResult.Kind#EXECUTED} (the commit's failure leaves the outcome unknown), and rolls back
   * after {@link AttemptResult.Kind#RELEASED}, {@link AttemptResult.Kind#ROLLED_BACK}, {@link
   * AttemptResult.Kind#REQUEST_FAILED} and an error; after a replay or a refusal nothing was
   * written (on PostgreSQL a claim that gave up waiting, {@link AttemptResult.Kind#IN_PROGRESS},
   * leaves the transaction aborted: roll it back). The listener is not told ({@link #execute}
   * tells it). Never blocks. With {@link Builder#createSchema} {@code true}, the engine's first
   * attempts (until the table was created or found once, or {@link #createSchema()} ran) open a
   * connection of their own for it first, beside the caller's; later ones use only the caller's
   * connection.
   *
   * @param connection the connection of the caller's transaction, never {@code null}
   * @param request scope, key and fingerprint, never {@code null}
   * @param effect the operation, given {@code connection}, never {@code null}
   * @return the result, or the effect's error
   * @throws NullPointerException if an argument is {@code null}
   */
  public Mono<AttemptResult> attempt(Connection connection, IdempotentRequest request,
      Function<Connection, Mono<StoredResponse>> effect) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    return schemaReady()
        .then(Mono.defer(() -> attemptIn(connection, request, effect, false)))
        .map(R2dbcTransactionalIdempotency::plainInProgress)
        .onErrorResume(ClaimConflict.class, e -> Mono.just(AttemptResult.storeFailed(failure("claim", request, e.conflict))))
        .onErrorResume(e -> e instanceof IdemStoreException, e -> Mono.just(AttemptResult.storeFailed((IdemStoreException) e)));
  }

  private Mono<AttemptResult> attemptIn(Connection c, IdempotentRequest request, Function<Connection, Mono<StoredResponse>> effect,
      boolean confirming) {
    return sql.read(c, request.scope(), request.key())
        .onErrorMap(e -> failure("lookup", request, e))
        .flatMap(found -> {
          if (found.isPresent() && found.get().live() && !found.get().orphaned()) {
            return Mono.just(answer(found.get(), request));
          }
          return claim(c, request, 0, confirming).flatMap(claimed -> claimed.isPresent()
              ? Mono.just(claimed.get())
              : run(c, request, effect));
        });
  }

  /**
   * @return empty when the record is now this attempt's claim; else the answer of the record that
   *     a concurrent attempt committed
   */
  private Mono<Optional<AttemptResult>> claim(Connection c, IdempotentRequest request, int round, boolean confirming) {
    if (round >= MAX_ROUNDS) {
      return Mono.error(failure("claim", request, new IllegalStateException(
          "the record kept changing during " + MAX_ROUNDS + " claims")));
    }
    String p = request.scope().principal();
    String o = request.scope().operation();
    String k = request.key().value();
    String fingerprint = request.fingerprint().hex();
    long keep = claimExpiryMillis(retention);
    Duration wait = claimWait(confirming);
    Mono<Optional<AttemptResult>> claimed = boundedClaim(c, p, o, k, fingerprint, keep, wait)
        .flatMap(n -> n == 1 ? Mono.just(Optional.<AttemptResult>empty()) : settled(c, request, round, fingerprint, keep, confirming))
        .onErrorResume(R2dbcTransactionalIdempotency::lockWaitExceeded, e -> Mono.just(Optional.of(AttemptResult.inProgress(
            new ClaimGaveUp(request, boundable && !confirming && waited(wait).compareTo(CONFIRM_WAIT) < 0)))));
    return claimed
        .flatMap(mine -> mine.isPresent() || !sql.dialect.abortsTransactionOnError()
            ? Mono.just(mine)
            : Mono.from(c.createSavepoint(KeyTableSql.EFFECT_SAVEPOINT)).thenReturn(mine))
        .onErrorMap(e -> !(e instanceof IdemStoreException), e -> R2dbcKeyTable.isConflict(e)
            ? new ClaimConflict(e)
            : failure("claim", request, e));
  }

  /**
   * The claim's insert, its lock wait bounded by the {@link InProgressPolicy} where the database
   * allows it: a concurrent attempt's uncommitted record makes the insert wait for that attempt's
   * transaction; fail-fast waits {@link #FAIL_FAST_CLAIM_WAIT}, {@code waitUpTo} its wait (on
   * MariaDB in whole seconds, rounded up). PostgreSQL: {@code lock_timeout} set for the insert and
   * put back after it; MariaDB: {@code SET STATEMENT innodb_lock_wait_timeout = n FOR}.
   *
   * @param wait the bound, {@link #claimWait}
   * @return how many rows the insert wrote
   */
  private Mono<Long> boundedClaim(Connection c, String p, String o, String k, String fingerprint, long keep, Duration wait) {
    if (!boundable) {
      return sql.write(c, sql.claim, p, o, k, fingerprint, keep);
    }
    if (sql.dialect.abortsTransactionOnError()) {
      // PostgreSQL: a claim that gives up aborts the transaction, which then rolls back whole
      return select(c, "SELECT set_config('idem.saved_lock_timeout', current_setting('lock_timeout'), true),"
              + " set_config('lock_timeout', $1, true)", wait.toMillis() + "ms")
          .then(sql.write(c, sql.claim, p, o, k, fingerprint, keep))
          .flatMap(n -> select(c, "SELECT set_config('lock_timeout', current_setting('idem.saved_lock_timeout'), true)")
              .thenReturn(n));
    }
    long seconds = waited(wait).toSeconds();
    return sql.write(c, "SET STATEMENT innodb_lock_wait_timeout = " + seconds + " FOR " + sql.claim, p, o, k, fingerprint, keep);
  }

  /**
   * The claim's lock-wait bound: {@link #FAIL_FAST_CLAIM_WAIT} for a fail-fast policy, else the
   * policy's wait; a claim that confirms a give-up waits at least {@link #CONFIRM_WAIT} (on
   * MariaDB a fail-fast claim does not wait at all either way: {@link #boundedClaim}).
   */
  private Duration claimWait(boolean confirming) {
    Duration wait = inProgress.maxWait().isZero() ? FAIL_FAST_CLAIM_WAIT : inProgress.maxWait();
    return confirming && wait.compareTo(CONFIRM_WAIT) < 0 ? CONFIRM_WAIT : wait;
  }

  /**
   * The wait a bound gives on this database: PostgreSQL's {@code lock_timeout} is the bound; MariaDB
   * waits whole seconds, the bound rounded up, and a fail-fast claim none at all.
   */
  private Duration waited(Duration wait) {
    if (sql.dialect.abortsTransactionOnError()) {
      return wait;
    }
    return Duration.ofSeconds(inProgress.maxWait().isZero() ? 0 : (wait.toMillis() + 999) / 1000);
  }

  /** A give-up's result with the public exception, as every other in-progress answer ({@link ClaimGaveUp} is internal). */
  private static AttemptResult plainInProgress(AttemptResult result) {
    if (result.failure().orElse(null) instanceof ClaimGaveUp gaveUp) {
      return AttemptResult.inProgress(new RequestInProgressException(gaveUp.key, gaveUp.retryAfter()));
    }
    return result;
  }

  /**
   * A bounded claim gave up waiting for a lock, before the effect ran; the transaction must roll
   * back. Most often a duplicate holds the key's row, but not always (the class says why), so
   * {@link #execute} confirms a give-up that is {@link #confirmable}.
   */
  private static final class ClaimGaveUp extends RequestInProgressException {
    private static final long serialVersionUID = 1L;

    /** Whether the claim waited less than {@link #CONFIRM_WAIT} (as the database counts it) and was not a confirmation. */
    final boolean confirmable;

    /** The key, for the public exception that replaces this one in the result. */
    final transient IdempotencyKey key;

    ClaimGaveUp(IdempotentRequest request, boolean confirmable) {
      super(request.key(), Duration.ofSeconds(1));
      this.confirmable = confirmable;
      this.key = request.key();
    }
  }

  /** Runs a query for its side effects, reading and dropping its rows. */
  private static Mono<Void> select(Connection c, String query, Object... params) {
    io.r2dbc.spi.Statement st = c.createStatement(query);
    for (int i = 0; i < params.length; i++) {
      st.bind(i, params[i]);
    }
    return Flux.from(st.execute()).concatMap(result -> result.map((row, meta) -> 1)).then();
  }

  /** PostgreSQL 55P03 (lock_timeout), MariaDB/MySQL 1205 (innodb_lock_wait_timeout): a bounded claim gave up. */
  private static boolean lockWaitExceeded(Throwable e) {
    return e instanceof R2dbcException r && ("55P03".equals(r.getSqlState()) || r.getErrorCode() == 1205);
  }

  /**
   * The insert wrote nothing: the key has a committed record (the insert waited for its transaction
   * to end). Read it as it is now and answer it; an expired record or an orphaned claim is taken
   * over where the insert cannot replace it (MySQL).
   */
  private Mono<Optional<AttemptResult>> settled(Connection c, IdempotentRequest request, int round, String fingerprint, long keep,
      boolean confirming) {
    return sql.readLatest(c, request.scope(), request.key()).flatMap(found -> {
      if (found.isEmpty()) {
        return claim(c, request, round + 1, confirming); // purged in between
      }
      KeyRecord row = found.get();
      if (row.live() && !row.orphaned()) {
        return Mono.just(Optional.of(answer(row, request)));
      }
      String takeover = sql.takeover;
      if (takeover == null) {
        return claim(c, request, round + 1, confirming);
      }
      return sql.write(c, takeover, fingerprint, keep, request.scope().principal(), request.scope().operation(), request.key().value())
          .flatMap(n -> n == 1 ? Mono.just(Optional.<AttemptResult>empty()) : claim(c, request, round + 1, confirming));
    });
  }

  /**
   * How long after the claim its record expires: the retention and a margin, {@link
   * JdbcIdempotency#EXPIRY_MARGIN} or the retention if shorter, so that a completion within the
   * margin rewrites no expiry (on PostgreSQL a HOT update) and a short retention stays short (a
   * record kept 1 s lives at most 2 s, not a minute).
   */
  static long claimExpiryMillis(Duration retention) {
    return retention.toMillis() + Math.min(JdbcIdempotency.EXPIRY_MARGIN.toMillis(), retention.toMillis());
  }

  /** The claim is this attempt's: the effect, then the completion or the answer to roll back. */
  private Mono<AttemptResult> run(Connection c, IdempotentRequest request, Function<Connection, Mono<StoredResponse>> effect) {
    Mono<StoredResponse> response;
    try {
      response = Objects.requireNonNull(effect.apply(c), "the effect returned null instead of a Mono");
    } catch (RuntimeException | Error e) {
      return Mono.error(e);
    }
    return response
        .switchIfEmpty(Mono.error(() -> new IllegalStateException("the effect completed without a response")))
        .flatMap(answer -> {
          if (!policy.shouldStore(answer)) {
            return Mono.just(AttemptResult.of(Outcome.executed(answer, false, false))); // the caller rolls back
          }
          return complete(c, request, answer)
              .then(Mono.just(AttemptResult.of(Outcome.executed(answer))))
              .onErrorResume(e -> {
                if (!R2dbcKeyTable.transactionAborted(e)) {
                  return Mono.just(AttemptResult.rolledBack(failure("storing the response", request, e), true));
                }
                if (answer.status() < 400) {
                  return Mono.just(AttemptResult.rolledBack(abortedAnswerRefused(answer, e), false));
                }
                // PostgreSQL: the effect caught an SQL error that aborted the transaction; its client
                // error is its deterministic answer, stored without its writes.
                return Mono.from(c.rollbackTransactionToSavepoint(KeyTableSql.EFFECT_SAVEPOINT))
                    .then(complete(c, request, answer))
                    .then(Mono.just(AttemptResult.of(Outcome.executed(answer))))
                    .onErrorResume(again -> Mono.just(AttemptResult.rolledBack(failure("storing the response", request, again), true)));
              });
        });
  }

  private Mono<Void> complete(Connection c, IdempotentRequest r, StoredResponse response) {
    long keep = retention.toMillis();
    return Mono.fromSupplier(() -> protection.seal(r.scope(), r.key(), r.fingerprint(), response))
        .flatMap(bytes -> sql.write(c, sql.complete, new R2dbcKeyTable.TypedNull(Integer.class, protection.clearStatus(response)),
            bytes, keep, keep, r.scope().principal(), r.scope().operation(), r.key().value()))
        .flatMap(n -> n == 1 ? Mono.<Void>empty() : Mono.error(new IllegalStateException(
            "the claim of " + R2dbcKeyTable.logRef(r.scope(), r.key()) + " disappeared before completion")));
  }

  /** The answer of a live record: a replay, or a refusal. */
  private AttemptResult answer(KeyRecord row, IdempotentRequest request) {
    Fingerprint recorded = Fingerprint.fromHex(row.fingerprint());
    if (!recorded.equals(request.fingerprint())) {
      return AttemptResult.keyReused(new IdempotencyKeyReusedException(request.scope(), request.key()));
    }
    byte[] response = row.response();
    if (response == null) {
      // a lease-mode claim of another component sharing this table
      long seconds = Math.max(1, (row.leaseRemainingMillis() + 999) / 1000);
      return AttemptResult.inProgress(new RequestInProgressException(request.key(), Duration.ofSeconds(seconds)));
    }
    try {
      return AttemptResult.of(Outcome.replayed(protection.open(request.scope(), request.key(), recorded, response)));
    } catch (StoredResponseUnreadableException e) {
      return AttemptResult.storeFailed(e);
    }
  }

  /**
   * Creates the key table and its index now, when missing and {@link Builder#createSchema} allows
   * it, as the first attempt would otherwise: for a start-up that takes the cost before the first
   * request. Idempotent; concurrent creators are tolerated.
   *
   * @return completes when the table is there (or creation is off), or fails with an {@link
   *     IdemStoreException}
   */
  public Mono<Void> createSchema() {
    return schemaReady();
  }

  /**
   * The schema, once, on a connection of its own (MySQL commits DDL: never inside the attempt's
   * transaction); no connection at all once it was created or found, or without {@code
   * createSchema}: an attempt in a caller's transaction holds a connection of the pool already, and
   * waiting for a second one would hang a pool whose every connection is so held.
   */
  private Mono<Void> schemaReady() {
    return Mono.defer(() -> !sql.schemaPending() ? Mono.<Void>empty()
        : Mono.usingWhen(Mono.defer(() -> Mono.from(factory.create())), sql::ensureSchema, Connection::close,
                (c, error) -> c.close(), Connection::close)
            .onErrorMap(e -> new IdemStoreException("transactional mode (" + sql.table + ", R2DBC): creating the key table"
                + " failed: " + R2dbcKeyTable.describe(e), e)));
  }

  private IdemStoreException failure(String what, IdempotentRequest request, Throwable e) {
    return new IdemStoreException("transactional mode (" + sql.table + ", R2DBC): " + what + " of "
        + R2dbcKeyTable.logRef(request.scope(), request.key()) + " failed: " + R2dbcKeyTable.describe(e), e);
  }

  private static EffectFailedException abortedAnswerRefused(StoredResponse response, Throwable aborted) {
    return new EffectFailedException(new IllegalStateException("the effect answered " + response.status() + " although an SQL"
        + " error it caught had aborted its transaction (PostgreSQL rejects every later statement of an aborted transaction):"
        + " its writes were rolled back, so that answer would describe an effect that did not happen. Nothing was stored."
        + " Undo the failed statement with a savepoint of the effect's own, or let the error propagate", aborted));
  }

  /** A deadlock or serialization failure of the claim, before the effect ran: the whole transaction may run again. */
  private static final class ClaimConflict extends RuntimeException {
    private static final long serialVersionUID = 1L;

    final Throwable conflict;

    ClaimConflict(Throwable cause) {
      super(cause.getMessage(), cause, false, false);
      this.conflict = cause;
    }
  }

  /** Builds an {@link R2dbcTransactionalIdempotency}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final ConnectionFactory factory;
    private String table = "idem_keys";
    private boolean createSchema = true;
    private Duration retention = Duration.ofHours(24);
    private ResponsePolicy policy = ResponsePolicy.standard();
    private ResponseProtection protection = ResponseProtection.none();
    private IdemListener listener = IdemListener.NONE;
    private InProgressPolicy inProgress = InProgressPolicy.failFast();

    private Builder(ConnectionFactory factory) {
      this.factory = Objects.requireNonNull(factory, "factory");
    }

    /**
     * @param table the key table: a plain SQL identifier, as for {@code JdbcIdempotency.Builder#table}
     * @return this builder
     * @throws IllegalArgumentException if it is not one
     */
    public Builder table(String table) {
      JdbcIdempotency.builder().table(table); // validates, with the JDBC engines' rule
      this.table = table;
      return this;
    }

    /**
     * @param createSchema whether the first attempt creates the table and its index when missing,
     *     on a connection of its own (default {@code true})
     * @return this builder
     */
    public Builder createSchema(boolean createSchema) {
      this.createSchema = createSchema;
      return this;
    }

    /**
     * @param retention how long a completed key is kept at least, from its completion (default 24
     *     hours); between 1 second and {@link JdbcIdempotency#MAX_RETENTION}, as idem-jdbc's
     * @return this builder
     * @throws IllegalArgumentException if out of that range
     */
    public Builder retention(Duration retention) {
      Objects.requireNonNull(retention, "retention");
      if (retention.compareTo(Duration.ofSeconds(1)) < 0 || retention.compareTo(JdbcIdempotency.MAX_RETENTION) > 0) {
        throw new IllegalArgumentException("retention must be between 1 second and 3650 days, was " + retention);
      }
      this.retention = retention;
      return this;
    }

    /**
     * @param policy which responses are stored; the others roll back with the effect's writes
     *     (default {@link ResponsePolicy.standard()})
     * @return this builder
     * @throws NullPointerException if {@code policy} is {@code null}
     */
    public Builder responsePolicy(ResponsePolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * @param protection the keyring that protects stored responses at rest, as idem-jdbc's (one
     *     table, one keyring), or {@link ResponseProtection#none()} (the default)
     * @return this builder
     * @throws NullPointerException if {@code protection} is {@code null}
     */
    public Builder responseProtection(ResponseProtection protection) {
      this.protection = Objects.requireNonNull(protection, "protection");
      return this;
    }

    /**
     * @param listener told of every attempt of {@link R2dbcTransactionalIdempotency#execute}
     *     (default {@link IdemListener#NONE}); it must not block
     * @return this builder
     * @throws NullPointerException if {@code listener} is {@code null}
     */
    public Builder listener(IdemListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * What a duplicate of a running attempt gets: its claim waits on the running attempt's
     * uncommitted record, {@link R2dbcTransactionalIdempotency#FAIL_FAST_CLAIM_WAIT} for {@link
     * InProgressPolicy#failFast()} (the default; draft section 2.6: 409 while the first is
     * processed) or up to {@link InProgressPolicy#waitUpTo}'s wait, then answers {@link
     * AttemptResult.Kind#IN_PROGRESS}; a first attempt that commits within the wait is replayed.
     * On MySQL (not MariaDB) the wait is the server's {@code innodb_lock_wait_timeout}. In {@link
     * #execute} a fail-fast claim that gave up is confirmed once with {@link
     * R2dbcTransactionalIdempotency#CONFIRM_WAIT} in a new transaction (the class says why), so a
     * duplicate is answered after about 110 ms on PostgreSQL.
     *
     * @param inProgress the policy, never {@code null}
     * @return this builder
     * @throws NullPointerException if {@code inProgress} is {@code null}
     */
    public Builder inProgress(InProgressPolicy inProgress) {
      this.inProgress = Objects.requireNonNull(inProgress, "inProgress");
      return this;
    }

    /**
     * @return a new, thread-safe engine; no connection is opened until its first attempt
     * @throws IllegalArgumentException if the factory's database is neither PostgreSQL nor MariaDB/MySQL
     */
    public R2dbcTransactionalIdempotency build() {
      Dialect dialect = R2dbcKeyTable.dialectOf(factory, "R2dbcTransactionalIdempotency",
          "For another database, use lease mode (AsyncLeaseIdempotency) or JDBC's TransactionalIdempotency (blocking)");
      return new R2dbcTransactionalIdempotency(this, dialect, R2dbcKeyTable.mariadb(factory));
    }
  }
}
