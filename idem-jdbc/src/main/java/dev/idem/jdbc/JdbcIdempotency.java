package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.ResponsePolicy;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.jdbc.internal.ConflictRetry.Round;
import dev.idem.jdbc.internal.SchemaScript;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Transactional mode: runs an effect that lives in the same database as the key table, so that the
 * claim, the effect and the stored response commit in one transaction.
 *
 * <p>{@link #execute(Connection, IdempotentRequest, Effect)} follows Idem's contract:
 *
 * <ol>
 *   <li>A live record with the same scope, key and fingerprint: its stored response is returned as
 *       {@link Outcome.Kind#REPLAYED}; the effect does not run.
 *   <li>The same scope and key with another fingerprint: {@link IdempotencyKeyReusedException};
 *       nothing runs, nothing is written.
 *   <li>No live record: the claim is inserted, the effect runs on the same connection, the response
 *       is stored, and all three commit together ({@link Outcome.Kind#EXECUTED}). With {@link
 *       Strategy#KEY_LAST} the effect runs first and the key's row is inserted with its response
 *       afterwards, in the same transaction. Any failure before
 *       the commit rolls all three back, so a retry runs the operation again. A response that the
 *       {@link ResponsePolicy} does not store (by default 5xx, 408, 425, 429) is returned with
 *       {@link Outcome#stored()} {@code false}, and the transaction is rolled back as if it failed.
 * </ol>
 *
 * <p>Duplicates are serialized by the claim statement itself, never by a read followed by an insert:
 * see {@link Dialect} for how each database does it. A lookup by primary key before the claim
 * answers replays in one read; when it finds nothing, the claim decides.
 *
 * <p><b>Transactions.</b> If the connection is in auto-commit mode, Idem begins, commits or rolls
 * back the transaction itself and restores auto-commit. If a transaction is already open ({@code
 * getAutoCommit() == false}), Idem joins it and does not commit: the caller commits, and must roll
 * back when this method throws. On SQLite a joined transaction should have been opened as {@code
 * IMMEDIATE} (sqlite-jdbc: {@code transaction_mode=IMMEDIATE}).
 *
 * <p><b>SQL errors the effect catches.</b> An effect may catch an SQL error of its own (a unique
 * violation, say) and answer it ({@code 409 email already registered}); that answer is returned and
 * stored on every database. On SQLite, MySQL and MariaDB the failed statement alone is undone and
 * the rest of the effect commits with the answer. On PostgreSQL the error aborts the whole
 * transaction (SQLState 25P02 for every later statement), so none of the effect's writes can
 * commit: a client error (4xx) is then stored without them, which is what the effect meant by it;
 * any other answer (a 2xx would describe writes that did not happen) is refused with {@link
 * EffectFailedException}, nothing stored. A failure answer that the {@link ResponsePolicy} does not
 * store (the application's own 503, say) is returned as it is. In Idem's own transaction the
 * answer is recorded in a second transaction without running the effect again; in a caller's
 * transaction a savepoint that the claim's statement sets in the same round trip ({@code
 * idem_before_effect}) is rolled back to; a call of Idem made inside an effect, on the same
 * thread, releases the savepoints it set before it returns, so that the outer call's rollback still
 * reaches its own. An effect that wants to keep its other writes past an
 * error on PostgreSQL sets a savepoint of its own around the statement that may fail.
 *
 * <p><b>Retention.</b> Every record lives at least {@link Builder#retention(Duration) retention}
 * after its completion, by the database's clock, and at most {@link #EXPIRY_MARGIN} longer: the
 * claim writes an expiry that far past the retention, so that a completion within that time leaves
 * it as it is and rewrites no indexed column (PostgreSQL can then make it a HOT update). An expired
 * record counts as absent: its key starts a new operation.
 *
 * <p><b>Round trips.</b> On PostgreSQL the lookup that answers replays and the claim travel in one
 * round trip (with the savepoint when there is one; on a connection marked {@linkplain
 * Connection#isReadOnly() read-only} the lookup goes alone, since a read-only transaction refuses
 * the claim's INSERT even when it would insert nothing), and in a transaction Idem owns the last key
 * statement (the completion, or with {@link Strategy#KEY_LAST} the completed record) carries the
 * {@code COMMIT}, and fails before it when it wrote no row, so nothing commits without its key. A
 * create in Idem's own transaction is then the effect's own statements and two round trips, with
 * either strategy (the hand-written key-last transaction has the same count: its key row, and the
 * COMMIT); in a caller's transaction the caller commits. A replay is the lookup and, with {@code CLAIM_FIRST}, the end of
 * its transaction. Elsewhere each statement is a round trip. {@code docs/reports/benchmarks.md} counts them
 * per dialect.
 *
 * <p>Instances are immutable after {@link Builder#build()} and thread-safe; share one per table. A
 * {@link Connection} must be used by one thread at a time, as JDBC requires.
 */
public final class JdbcIdempotency implements KeyStatusReader {

  /** The default retention of a record: 24 hours. */
  public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);

  /** The longest retention accepted: 3650 days. */
  public static final Duration MAX_RETENTION = Duration.ofDays(3650);

  /**
   * How far past the retention a claim sets its record's expiry: 1 minute. A completion within that
   * time of its claim keeps the expiry; a later one moves it to {@code retention} from the
   * completion.
   */
  public static final Duration EXPIRY_MARGIN = Duration.ofMinutes(1);

  /** The least wait for SQLite's write lock Idem sets on a connection: 10 seconds. */
  public static final Duration DEFAULT_SQLITE_BUSY_TIMEOUT = Duration.ofSeconds(10);

  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");

  private final Duration retention;
  private final Duration sqliteBusyTimeout;
  private final @Nullable DataSource dataSource;
  private final ResponsePolicy responsePolicy;
  private final Strategy strategy;
  private final ResponseProtection protection;
  /** The key table's statements, schema and purge, shared in shape with {@link JdbcLeaseStore}. */
  private final KeyTable keys;
  /** The bound of a claim's wait for a concurrent attempt's row; {@code null}: the database's own. */
  private final @Nullable Duration claimLockWait;
  /** What the engine's pieces share: the key table, the retention, the response policy, the lock waits. */
  private final EngineSettings settings;
  /** The statements of a round, in a caller's, a runner's or Idem's own transaction. */
  private final TransactionalRounds rounds;
  private final KeyStatusQuery statusQuery;

  private JdbcIdempotency(Builder b) {
    this.retention = b.retention;
    this.sqliteBusyTimeout = b.sqliteBusyTimeout;
    this.dataSource = b.dataSource;
    this.responsePolicy = b.responsePolicy;
    this.strategy = b.strategy;
    this.protection = b.protection;
    this.keys = new KeyTable(b.table, b.createSchema, b.protection);
    this.claimLockWait = b.claimLockWait;
    this.settings = new EngineSettings(keys, retention, responsePolicy, claimLockWait, sqliteBusyTimeout);
    this.rounds = new TransactionalRounds(settings, keys, claimLockWait != null);
    this.statusQuery = new KeyStatusQuery(b.table, b.protection);
  }

  /** @return a builder with the defaults: table {@code idem_keys}, retention 24 h, schema on demand */
  public static Builder builder() {
    return new Builder();
  }

  /** @return the key table's name */
  public String table() {
    return keys.name();
  }

  /** @return how long a record lives after its completion */
  public Duration retention() {
    return retention;
  }

  /** @return which responses are stored; the others are released (see {@link Builder#responsePolicy}) */
  public ResponsePolicy responsePolicy() {
    return responsePolicy;
  }

  /** @return how stored responses are written and read: in clear, or encrypted (see {@link Builder#responseProtection}) */
  public ResponseProtection responseProtection() {
    return protection;
  }

  /** @return the order in which Idem writes the key and runs the effect in its own transactions */
  public Strategy strategy() {
    return strategy;
  }
  /**
   * @return how long a claim waits for a concurrent attempt's uncommitted row of the same key before
   *     it gives up with {@link RequestInProgressException}, or {@code null} when the database's own
   *     lock wait applies ({@link Builder#claimLockWait})
   */
  public @Nullable Duration claimLockWait() {
    return claimLockWait;
  }

  /**
   * @return the DataSource {@link #execute(IdempotentRequest, Effect)} borrows connections from
   *     ({@link Builder#dataSource}), or {@code null} when the builder had none
   */
  public @Nullable DataSource dataSource() {
    return dataSource;
  }

  /**
   * The order of the writes in a transaction that Idem owns: its own ({@code execute} on a
   * connection in auto-commit mode) or the one a {@link TransactionRunner} opens for {@link
   * TransactionalIdempotency} (the servlet filter's and the Spring starter's transactional mode).
   * Both give one committed effect per scope and key, replay without running the effect, and reject
   * a reused key; they differ in what a concurrent duplicate does while the first request is in
   * flight, and in cost. In a caller's transaction ({@code execute} on a connection with {@code
   * getAutoCommit() == false}, {@link TransactionalIdempotency#attemptIn}) Idem always claims
   * first, whatever the strategy: it cannot undo an effect there without rolling back the caller's
   * own work.
   *
   * <p>{@code docs/reports/benchmarks.md} measures both, next to the same two orders written by hand. On
   * PostgreSQL both take the same round trips (three for a create with one statement of its own);
   * {@code KEY_LAST} measured 10 to 25 % more creates per second, as it writes the key's row once
   * instead of inserting and then updating it. In a runner's transaction {@code KEY_LAST} also
   * answers a replay with one primary-key read outside any transaction, and sets no savepoint; an
   * answer that streams to the client claims its key before its first byte ({@link
   * dev.idem.core.EffectContext#ensureClaimed()}). {@code KEY_LAST} is the one default
   * everywhere: this builder's, hence the servlet filter's and {@link TransactionalIdempotency}'s,
   * and the Spring starter's ({@code idem.strategy}), measured in {@code
   * docs/reports/benchmarks-http.md}. Choose {@link #CLAIM_FIRST} when an effect must never run
   * only to be rolled back for a duplicate (it takes sequence values, holds locks others wait on),
   * at the cost of one write more per create. Earlier builds of this builder defaulted to
   * {@code CLAIM_FIRST}; the stored records are the same in both orders, so changing the order
   * never makes a stored key run again.
   */
  public enum Strategy {
    /**
     * Inserts the claim, runs the effect, then stores the response in the claim's row:
     * three statements besides the effect. A concurrent duplicate blocks on the claim until the
     * first transaction ends and then replays it, so the effect runs once in all, even counting
     * attempts that were rolled back.
     */
    CLAIM_FIRST,
    /**
     * The default. Runs the effect first, then inserts the key's row already completed, with its response: two
     * statements besides the effect, one round trip fewer than {@link #CLAIM_FIRST}. The key's
     * primary key still serializes duplicates: a concurrent duplicate runs its effect, then waits on
     * the winner's key row, and when the winner commits it rolls its own effect back and replays
     * the winner's response. So the effect may <em>run</em> more than once under a race, but only
     * one run commits. Consequences to accept before choosing it: the effect must do nothing that a
     * rollback does not undo (which transactional mode asks anyway); sequence and auto-increment
     * values a rolled-back duplicate took leave gaps; a duplicate holds its effect's locks while it
     * waits; and an effect that fails because of the winner's rows is answered with the winner's
     * stored response when, after the rollback, the key has a live record (its own unique
     * constraint); when it failed with a deadlock or serialization failure (SQLState class 40)
     * while the winner was still running, the attempt is run again in {@link #CLAIM_FIRST} order,
     * whose claim waits for the winner instead of meeting it in the effect's locks again. Last, a
     * transaction must end within the {@link Builder#retention
     * retention} of the record a racing winner wrote: one that runs longer finds that record
     * expired, and its effect commits as a new operation (with the default of 24 hours, no
     * realistic transaction does).
     */
    KEY_LAST
  }

  /**
   * Runs {@code effect} at most once for the request's scope and key, on a connection borrowed from
   * the builder's {@link DataSource} and closed afterwards.
   *
   * @throws IllegalStateException if the builder had no data source
   * @see #execute(Connection, IdempotentRequest, Effect)
   */
  public Outcome execute(IdempotentRequest request, Effect effect) {
    return onOwnConnection("execute", connection -> execute(connection, request, effect));
  }

  /**
   * Runs {@code body} on a connection of the builder's data source, in auto-commit mode, and
   * closes it (back to its pool).
   *
   * @param method the name of the method's {@code Connection} variant, for the message when there
   *     is no data source
   * @throws IllegalStateException if the builder had no data source
   * @throws IdemStoreException if no connection can be had, or setting or closing it fails
   */
  private <T> T onOwnConnection(String method, java.util.function.Function<Connection, T> body) {
    if (dataSource == null) {
      throw new IllegalStateException("no DataSource configured: use " + method + "(Connection, ...) or Builder.dataSource");
    }
    try (Connection connection = dataSource.getConnection()) {
      if (!connection.getAutoCommit()) {
        connection.setAutoCommit(true);
      }
      return body.apply(connection);
    } catch (SQLException e) {
      throw new IdemStoreException("cannot get a connection from the data source: " + e.getMessage(), e);
    }
  }

  /**
   * Runs {@code effect} at most once for the request's scope and key (see the class description).
   *
   * @param connection an open connection to a supported database, used by this thread only
   * @param request the scope, key and fingerprint, never {@code null}
   * @param effect the operation, run on {@code connection} inside the transaction; never {@code null}
   * @return the outcome, never {@code null}: executed now, or replayed from the store
   * @throws IdempotencyKeyReusedException if the key was used in this scope with another payload
   * @throws RequestInProgressException if the record for the key is a claim without a response
   *     (written by another component sharing the table); retry later
   * @throws EffectFailedException if the effect threw a checked exception (rolled back), or, on
   *     PostgreSQL, answered a status below 400 after an SQL error it caught had aborted the
   *     transaction (rolled back; see the class description)
   * @throws dev.idem.core.StoredResponseUnreadableException if the key's live record has a stored
   *     response that cannot be read (see {@link Builder#responseProtection}): nothing runs, nothing
   *     is replayed, and retrying does not help until an operator acts
   * @throws IdemStoreException if the database failed, including a lock or busy timeout (rolled
   *     back). In a transaction Idem owns, a deadlock or serialization failure (SQLState class 40,
   *     or MySQL/MariaDB error 1213) anywhere, the COMMIT included, means the database rolled
   *     everything back: the operation runs again, up to five rounds in all, after a short random
   *     pause. A lock wait timeout (MySQL 1205) is not run again: it already waited its whole time
   * @throws IllegalStateException if the effect returned {@code null} (rolled back), or if the
   *     caller's transaction had already been aborted by an earlier error (PostgreSQL, SQLState
   *     25P02): the caller's error, not a store failure
   * @throws RuntimeException any unchecked exception of the effect, as it is (rolled back)
   */
  public Outcome execute(Connection connection, IdempotentRequest request, Effect effect) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    if (autoCommit(connection)) {
      // Idem's own transactions, run by the one transactional engine on this connection.
      OwnTransactionRunner own = new OwnTransactionRunner(connection, Dialect.of(connection), settings);
      return TransactionalIdempotency.executeInOwnTransactions(this, own, request, effect);
    }
    RoundEnd end = rounds.claimFirst(connection, request, effect, false, false, null, null);
    if (end instanceof RoundEnd.Answered answered) {
      return answered.outcome();
    }
    throw new RequestInProgressException(request.key(), Duration.ofSeconds(1)); // a bounded claim gave up
  }

  /** Claim-first work in an open transaction ({@link TransactionalRounds#claimFirst}); for {@link TransactionalIdempotency}. */
  RoundEnd claimFirst(Connection connection, IdempotentRequest request, Effect effect, boolean confirming, boolean lookedUp,
      @Nullable Runnable onEnsureClaimed, OwnTransactionRunner.@Nullable OwnTransaction own) {
    return rounds.claimFirst(connection, request, effect, confirming, lookedUp, onEnsureClaimed, own);
  }

  /** Key-last work in an open transaction ({@link TransactionalRounds#runThenRecord}); for {@link TransactionalIdempotency}. */
  RoundEnd runThenRecord(Connection connection, IdempotentRequest request, Effect effect, Runnable onClaimed,
      OwnTransactionRunner.@Nullable OwnTransaction own) {
    return rounds.runThenRecord(connection, request, effect, onClaimed, own);
  }

  /** @return whether the claim-first work reads the record with the claim ({@link TransactionalRounds#lookupWithClaim}) */
  boolean lookupWithClaim(Connection connection, Dialect dialect) {
    return rounds.lookupWithClaim(connection, dialect);
  }

  /** @return whether the key table was made ready for the dialect already (checked, or created) */
  boolean schemaReady(Dialect dialect) {
    return keys.schemaReady(dialect);
  }

  /**
   * Makes the key table ready (checked, or created when the builder allows it) on a connection in
   * auto-commit, before a runner's first transaction: on MySQL and MariaDB a table cannot be created
   * inside one. Checked once per dialect.
   *
   * @throws IdemStoreException if the table is refused or cannot be created
   */
  void prepareSchemaOutsideTransactions(Connection connection) {
    keys.ensureSchema(connection, Dialect.of(connection), true);
  }

  /**
   * Answers a request from its live record without running anything and without taking a lock: the
   * read {@link #execute(Connection, IdempotentRequest, Effect)} starts with. For a caller that
   * wants replays answered before it opens a transaction of its own (the Spring starter's
   * transactional filter does, so that a replay on SQLite never waits for the write lock).
   *
   * @param connection an open connection, used by this thread only; best in auto-commit mode, so
   *     the read sees the latest committed record
   * @param request the scope, key and fingerprint, never {@code null}
   * @return the stored response as a {@link Outcome.Kind#REPLAYED} outcome, or empty if the key has
   *     no live record (none, expired, or a claim a broken transaction left)
   * @throws IdempotencyKeyReusedException if the live record has another fingerprint
   * @throws RequestInProgressException if the live record is a lease-mode claim without a response
   * @throws dev.idem.core.StoredResponseUnreadableException if the record's stored response cannot
   *     be read (see {@link Builder#responseProtection})
   * @throws IdemStoreException if the read fails
   */
  public Optional<Outcome> replay(Connection connection, IdempotentRequest request) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Dialect dialect = Dialect.of(connection);
    keys.ensureSchema(connection, dialect, autoCommit(connection));
    return Optional.ofNullable(keys.answerIfLive(connection, keys.statements(dialect), request));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On a connection of the builder's {@link Builder#dataSource data source}, in auto-commit
   * mode: see {@link #status(Connection, Scope, IdempotencyKey)}.
   *
   * @throws IllegalStateException if the builder had no data source
   */
  @Override
  public KeyStatus status(Scope scope, IdempotencyKey key) {
    return onOwnConnection("status", connection -> status(connection, scope, key));
  }

  /**
   * What the key table knows of (scope, key): one primary-key read that takes no lock and writes
   * nothing, on the database's clock. A transactional claim is not visible before its transaction
   * commits, so an operation still running in transactional mode reads as {@link KeyStatus.Absent}
   * (a retry then waits on its claim and replays); a lease-mode claim of a store sharing the table
   * reads as {@link KeyStatus.InProgress}. The table is created first if missing and allowed, as
   * for {@link #replay}.
   *
   * @param connection an open connection, used by this thread only; best in auto-commit mode, so
   *     the read sees the latest committed record
   * @param scope principal and operation, never {@code null}
   * @param key the idempotency key, never {@code null}
   * @return the status, never {@code null}
   * @throws dev.idem.core.StoredResponseUnreadableException if the key is completed and its
   *     protected response cannot be opened to read its status
   * @throws IdemStoreException if the read fails
   */
  public KeyStatus status(Connection connection, Scope scope, IdempotencyKey key) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Dialect dialect = Dialect.of(connection);
    keys.ensureSchema(connection, dialect, autoCommit(connection));
    try {
      return statusQuery.read(connection, dialect, scope, key);
    } catch (SQLException e) {
      throw storeFailure("status read failed", e);
    }
  }

  /**
   * Deletes the record of the request's scope and key on {@code connection}, inside whatever
   * transaction it is in. It is for a caller that ran {@link #execute(Connection, IdempotentRequest,
   * Effect)} in its own transaction and then decides to keep the effect but not the response
   * (an answer too long to store, say): without the record, a retry with the key runs again.
   *
   * @param connection an open connection, normally in the caller's transaction, used by this
   *     thread only
   * @param request the scope and key, never {@code null}
   * @return whether a record was deleted
   * @throws IdemStoreException if the delete fails
   */
  public boolean release(Connection connection, IdempotentRequest request) {
    return keys.release(connection, request);
  }

  /**
   * Deletes expired records in batches, each batch in a short transaction of its own, so no long
   * table lock is taken. Expired records already count as absent, so purging only reclaims space;
   * it can run at any time, alongside traffic. A record renewed between the selection and the
   * delete is kept: the delete checks the expiry again.
   *
   * @param connection an open connection in auto-commit mode, used by this thread only
   * @param batchSize the most records one batch deletes, from 1 to 100 000
   * @return how many records were deleted in all
   * @throws IllegalArgumentException if {@code batchSize} is out of range
   * @throws IllegalStateException if the connection is inside a transaction
   * @throws IdemStoreException if the database fails; the batches before the failure stay deleted
   */
  public long purgeExpired(Connection connection, int batchSize) {
    return keys.purgeExpired(connection, batchSize);
  }

  /**
   * Creates the key table and its index if they do not exist, then checks that the table compares
   * record identities byte for byte (see {@link #checkSchema(Connection)}). Safe to call many times,
   * from many threads, and from many processes at the same moment on a new database (replicas
   * starting together): the table and its index are made once and no caller fails because another
   * made them first ({@link SchemaCreation}: an advisory lock on PostgreSQL, a named lock on MySQL
   * and MariaDB, the write lock and a busy wait on SQLite). The same statements ship as {@link
   * Dialect#schemaResource()} for own migrations.
   *
   * @param connection an open connection; in auto-commit mode the DDL is committed when this returns
   *     (on PostgreSQL in one transaction of its own, the connection back in auto-commit mode),
   *     otherwise it joins the open transaction (MySQL's DDL commits it)
   * @throws IdemStoreException if the DDL fails, if another creator held the table's schema lock for
   *     longer than {@link SchemaCreation#LOCK_WAIT}, or if an existing table, created by an earlier
   *     version, compares identities loosely: the message names the column and the migration
   *     statement
   */
  public void createSchema(Connection connection) {
    keys.createSchema(connection);
  }

  /**
   * Checks that the existing key table compares the columns that identify a record ({@code
   * principal}, {@code operation}, {@code idem_key}) and the owner token byte for byte: no PAD
   * SPACE, case-insensitive or nondeterministic collation, no {@code CHAR(n)}, no column too narrow
   * for a value Idem accepts (which would be cut and collide). Tables created by Idem 0.x on MySQL
   * and MariaDB fail it (their character columns pad trailing spaces). Idem runs this once per
   * instance and dialect before the first use of the table, whether or not it creates the schema.
   *
   * @param connection an open connection on which the table exists
   * @throws IdemStoreException if a column compares loosely (the message names the column, why,
   *     and the statement that migrates the table), a column is missing, or the catalog cannot be
   *     read
   */
  public void checkSchema(Connection connection) {
    keys.checkSchema(connection);
  }

  /**
   * Whether the key table exists where this connection's unqualified statements look for it, asked
   * of the catalog, so an open transaction is never aborted (a failing SELECT would abort it on
   * PostgreSQL): in the connection's current database on MySQL and MariaDB ({@code
   * getCatalog()}); on PostgreSQL, where the name resolves through the {@code search_path} ({@code
   * to_regclass}, the first schema of the path that has it, as the statements resolve it; not
   * merely the first schema of the path, which may exist without the table). A table of the same
   * name in another database, or in a schema the statements would not reach, does not count.
   *
   * @param connection an open connection
   * @return {@code true} if the catalog shows the table; {@code false} if not, or if the catalog
   *     cannot be read
   */
  public boolean tableExists(Connection connection) {
    return keys.tableExists(connection);
  }

  /** @return whether the connection is in auto-commit mode, that is, outside a caller's transaction */
  boolean autoCommit(Connection connection) {
    return keys.autoCommit(connection);
  }

  private RuntimeException storeFailure(String what, SQLException e) {
    return keys.storeFailure(what, e);
  }

  /** Builds a {@link JdbcIdempotency}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private String table = SchemaScript.DEFAULT_TABLE;
    private Duration retention = DEFAULT_RETENTION;
    private boolean createSchema = true;
    private Duration sqliteBusyTimeout = DEFAULT_SQLITE_BUSY_TIMEOUT;
    private @Nullable DataSource dataSource;
    private ResponsePolicy responsePolicy = ResponsePolicy.standard();
    private Strategy strategy = Strategy.KEY_LAST;
    private ResponseProtection protection = ResponseProtection.none();
    private @Nullable Duration claimLockWait;

    private Builder() {}

    /**
     * Bounds how long a claim waits for a concurrent attempt of the same key whose transaction has
     * not ended (its uncommitted row): past {@code wait} the claim gives up, nothing is written,
     * and {@link #execute} throws {@link RequestInProgressException}, so that a duplicate does not
     * hold a connection and a transaction for as long as the first attempt runs. The transactional
     * engine then answers at once or waits outside any transaction ({@link
     * TransactionalIdempotency}'s {@link dev.idem.core.InProgressPolicy}).
     *
     * <p>Where it applies: PostgreSQL ({@code lock_timeout}, set for the claim's statement alone, in
     * its round trip, and put back to the session's value after it) and MariaDB ({@code SET
     * STATEMENT innodb_lock_wait_timeout = 0 FOR} the claim: MariaDB counts in whole seconds, so the
     * claim does not wait at all there, whatever {@code wait} is). On MySQL, which has no
     * per-statement bound for InnoDB's lock wait, the server's {@code innodb_lock_wait_timeout}
     * applies (50 s by default, then {@link IdemStoreException}). On SQLite, where one writer at a
     * time holds the whole database, the busy timeout applies ({@link #sqliteBusyTimeout}). In a
     * caller's transaction on PostgreSQL, the failed claim aborts that transaction: the caller must
     * roll it back, as after any exception of {@link #execute}.
     *
     * <p>The bound is not specific to the key's row: PostgreSQL's {@code lock_timeout} ends any
     * lock wait of the statement, among them the relation extension lock that concurrent inserts
     * take for a moment as the table or an index grows, or a table lock of DDL. {@link
     * TransactionalIdempotency} therefore does not answer in progress on the first give-up: after
     * the rollback it takes the key first once more, waiting up to 100 ms (or {@code wait} if
     * longer), which a duplicate's row, held for its whole transaction, outlasts and a momentary
     * lock does not. A real duplicate is answered in progress after at most {@code wait} + 100 ms
     * there; a create that meets no lock pays nothing more. {@link #execute} in a caller's
     * transaction throws at the first give-up (the transaction is aborted; the caller decides).
     *
     * @param wait 0 to 60 seconds ({@code 0} is one millisecond on PostgreSQL, whose 0 means no
     *     bound), or {@code null} (the default) for the database's own lock wait
     * @return this builder
     * @throws IllegalArgumentException if {@code wait} is negative or longer than 60 seconds
     */
    public Builder claimLockWait(@Nullable Duration wait) {
      if (wait != null && (wait.isNegative() || wait.compareTo(Duration.ofSeconds(60)) > 0)) {
        throw new IllegalArgumentException("claimLockWait must be between 0 and 60s, was " + wait);
      }
      this.claimLockWait = wait == null ? null : wait.isZero() ? Duration.ofMillis(1) : wait;
      return this;
    }

    /**
     * Protects stored responses at rest: each response (status, header fields, body) is written
     * encrypted with the keyring's current key and bound to its record's principal, operation,
     * idempotency key and fingerprint; the {@code status} column is then left NULL. Records are read
     * with any key of the ring, and plaintext records written before stay readable unless the ring
     * refuses them. A response that cannot be authenticated is never replayed and its effect never
     * runs again: {@link #execute} throws {@link dev.idem.core.StoredResponseUnreadableException}.
     * See {@link ResponseProtection} for the envelope, rotation, and turning it on or off.
     *
     * @param protection the keyring, or {@link ResponseProtection#none()} (the default: in clear)
     * @return this builder
     * @throws NullPointerException if {@code protection} is {@code null}
     */
    public Builder responseProtection(ResponseProtection protection) {
      this.protection = Objects.requireNonNull(protection, "protection");
      return this;
    }

    /**
     * @param strategy the order of the writes in transactions Idem owns; default {@link
     *     Strategy#KEY_LAST} (read its consequences); {@link Strategy#CLAIM_FIRST} never runs an
     *     effect that a duplicate's rollback undoes
     */
    public Builder strategy(Strategy strategy) {
      this.strategy = Objects.requireNonNull(strategy, "strategy");
      return this;
    }

    /**
     * @param policy which responses are stored; the others are released: in a transaction Idem
     *     owns, the effect is rolled back with the claim; in a caller's transaction only the claim is
     *     removed and the caller decides. Default {@link ResponsePolicy#standard()} (store 2xx-4xx
     *     except 408, 425 and 429).
     */
    public Builder responsePolicy(ResponsePolicy policy) {
      this.responsePolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * @param table a plain SQL identifier of at most 48 characters ({@code [A-Za-z_][A-Za-z0-9_]*});
     *     choose the schema with the connection (PostgreSQL {@code search_path})
     * @throws IllegalArgumentException if {@code table} is not such an identifier
     */
    public Builder table(String table) {
      Objects.requireNonNull(table, "table");
      if (!IDENTIFIER.matcher(table).matches()) {
        throw new IllegalArgumentException(
            "table must be a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 48 characters), was '" + table + "'");
      }
      this.table = table;
      return this;
    }

    /**
     * @param retention how long a record is kept after its completion; from one second to 3650
     *     days. After it, the same key is a new operation, so choose it longer than any client's
     *     retry window. The retention enforced, which is the expiry policy to publish to clients
     *     (draft-ietf-httpapi-idempotency-key-header, section 2.3), is this plus up to
     *     {@link JdbcIdempotency#EXPIRY_MARGIN}: a completed key is kept at least {@code retention} and at most {@code
     *     retention + 1 minute} after its completion, by the database's clock (see
     *     <b>Retention</b> on the class).
     * @throws IllegalArgumentException if out of range
     */
    public Builder retention(Duration retention) {
      Objects.requireNonNull(retention, "retention");
      if (retention.compareTo(Duration.ofSeconds(1)) < 0 || retention.compareTo(MAX_RETENTION) > 0) {
        throw new IllegalArgumentException("retention must be between 1 second and 3650 days, was " + retention);
      }
      this.retention = retention;
      return this;
    }

    /**
     * @param createSchema {@code true} (the default) to create the table on first use with {@code
     *     CREATE TABLE IF NOT EXISTS}, safely when other processes do at the same moment ({@link
     *     SchemaCreation}); {@code false} when migrations create it
     */
    public Builder createSchema(boolean createSchema) {
      this.createSchema = createSchema;
      return this;
    }

    /**
     * @param timeout the least time a SQLite connection waits for the write lock: a connection whose
     *     {@code busy_timeout} is lower (sqlite-jdbc's default is 3 s) is raised to it; from 1 ms to 10
     *     minutes
     * @throws IllegalArgumentException if out of range
     */
    public Builder sqliteBusyTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("sqliteBusyTimeout must be between 1 ms and 10 minutes, was " + timeout);
      }
      this.sqliteBusyTimeout = timeout;
      return this;
    }

    /** @param dataSource where {@link #execute(IdempotentRequest, Effect)} borrows connections */
    public Builder dataSource(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      return this;
    }

    /** @return a new, thread-safe instance */
    public JdbcIdempotency build() {
      return new JdbcIdempotency(this);
    }
  }
}
