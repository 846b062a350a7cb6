package dev.idem.jdbc;

import dev.idem.core.Effect;
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
 * The key table of transactional mode: its records, their retention and response protection, its
 * statements on each database ({@link Dialect}), and its administration ({@link #status}, {@link
 * #replay}, {@link #release}, {@link #purgeExpired}, {@link #createSchema}, {@link #checkSchema}).
 * Its {@code execute} methods are the entry of the one transactional engine, {@link
 * TransactionalIdempotency}, for code that holds a {@link Connection} (or lends this table a
 * {@link Builder#dataSource DataSource}): they run an effect that lives in the same database as the
 * key table, so that the key, the effect and the stored response commit in one transaction, with
 * the engine's rounds and in the order of {@link #strategy()}.
 *
 * <p>{@link #execute(Connection, IdempotentRequest, Effect)} follows Idem's contract: a live
 * record with the same scope, key and fingerprint is replayed ({@link Outcome.Kind#REPLAYED}), the
 * effect not run; another fingerprint is {@link IdempotencyKeyReusedException}, nothing run or
 * written; otherwise the key, the effect's writes on the same connection and the response commit
 * together ({@link Outcome.Kind#EXECUTED}), and any failure before the commit rolls all three back,
 * so a retry runs the operation again. A response that the {@link ResponsePolicy} does not store
 * (by default 5xx, 408, 425, 429) is returned with {@link Outcome#stored()} {@code false}, its
 * transaction rolled back as if it failed. Duplicates are serialized by the key's statement
 * itself, never by a read followed by an insert ({@link Dialect}); a lookup by primary key answers
 * replays in one read.
 *
 * <p><b>Transactions.</b> If the connection is in auto-commit mode, Idem begins, commits or rolls
 * back the transaction itself and restores auto-commit. If a transaction is already open ({@code
 * getAutoCommit() == false}), Idem joins it and does not commit: the caller commits, and must roll
 * back when this method throws. On SQLite a joined transaction should have been opened as {@code
 * IMMEDIATE} (sqlite-jdbc: {@code transaction_mode=IMMEDIATE}).
 *
 * <p><b>Retention.</b> Every record lives at least {@link Builder#retention(Duration) retention}
 * after its completion, by the database's clock, and at most {@link #EXPIRY_MARGIN} longer: the
 * claim writes an expiry that far past the retention, so that a completion within that time leaves
 * it as it is and rewrites no indexed column (PostgreSQL can then make it a HOT update). An expired
 * record counts as absent: its key starts a new operation.
 *
 * <p>What the engine does with an SQL error the effect catches, and how many round trips a create
 * and a replay take on each database: see {@link TransactionalIdempotency}.
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
   * <p>{@code docs/reports/benchmarks.md} measures both beside the same orders written by hand: the
   * same round trips on PostgreSQL, and {@code KEY_LAST} 10 to 25 % more creates per second (it
   * writes the key's row once); in a runner's transaction it also answers a replay with one read
   * outside any transaction, and sets no savepoint. {@code KEY_LAST} is the one default everywhere
   * (this builder's, hence the servlet filter's, and the Spring starter's {@code idem.strategy}).
   * Choose {@link #CLAIM_FIRST} when an effect must never run only to be rolled back for a duplicate
   * (it takes sequence values, holds locks others wait on), at one write more per create. Earlier
   * builds of this builder defaulted to {@code CLAIM_FIRST}; the stored records are the same in both
   * orders, so changing the order never makes a stored key run again.
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
    return BorrowedConnection.apply(dataSource, "execute", connection -> execute(connection, request, effect));
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
   *     transaction (rolled back; see {@link TransactionalIdempotency})
   * @throws dev.idem.core.OutcomeUnknownException if the {@code COMMIT} of Idem's own transaction
   *     was sent and its answer lost: a retry with the key replays, or runs once
   * @throws dev.idem.core.StoredResponseUnreadableException if the key's live record has a stored
   *     response that cannot be read (see {@link Builder#responseProtection}): nothing runs, nothing
   *     is replayed, and retrying does not help until an operator acts
   * @throws IdemStoreException if the database failed, including a lock or busy timeout (rolled
   *     back). In a transaction Idem owns a deadlock or serialization failure (SQLState class 40,
   *     MySQL/MariaDB 1213), the COMMIT's included, runs the operation again (up to five rounds);
   *     a lock wait timeout (MySQL 1205) does not: it already waited its whole time
   * @throws IllegalStateException if the effect returned {@code null} (rolled back), or if the
   *     caller's transaction had already been aborted by an earlier error (PostgreSQL, SQLState
   *     25P02): the caller's error, not a store failure
   * @throws RuntimeException any unchecked exception of the effect, as it is (rolled back)
   */
  public Outcome execute(Connection connection, IdempotentRequest request, Effect effect) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(effect, "effect");
    if (keys.autoCommit(connection)) {
      // Idem's own transactions, run by the one transactional engine on this connection.
      OwnTransactionRunner own = new OwnTransactionRunner(connection, Dialect.of(connection), settings);
      return AttemptRounds.executeInOwnTransactions(this, own, request, effect);
    }
    RoundEnd end = rounds.claimFirst(connection, request, effect, false, false, null, null);
    if (end instanceof RoundEnd.Answered answered) {
      return answered.outcome();
    }
    throw new RequestInProgressException(request.key(), Duration.ofSeconds(1)); // a bounded claim gave up
  }

  /** @return the statements of a round in an open transaction, for the engine ({@link AttemptRounds}) */
  TransactionalRounds rounds() {
    return rounds;
  }

  /** @return the key table's statements, schema and checks, for the engine ({@link AttemptRounds}) */
  KeyTable keyTable() {
    return keys;
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
    keys.ensureSchema(connection, dialect, keys.autoCommit(connection));
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
    return BorrowedConnection.apply(dataSource, "status", connection -> status(connection, scope, key));
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
    keys.ensureSchema(connection, dialect, keys.autoCommit(connection));
    try {
      return statusQuery.read(connection, dialect, scope, key);
    } catch (SQLException e) {
      throw keys.storeFailure("status read failed", e);
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
     * <p>The bound is not specific to the key's row (PostgreSQL's {@code lock_timeout} also ends a
     * momentary relation extension lock or a table lock of DDL), so the engine confirms a give-up
     * once, waiting up to 100 ms, before it answers in progress ({@link TransactionalIdempotency});
     * {@link #execute} in a caller's transaction throws at the first give-up (the transaction is
     * aborted; the caller decides).
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
