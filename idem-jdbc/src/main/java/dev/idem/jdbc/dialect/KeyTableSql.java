package dev.idem.jdbc.dialect;

import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.internal.SchemaLock;
import dev.idem.jdbc.internal.SchemaScript;
import java.sql.SQLException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Every statement Idem sends to its key table, for one dialect and one table: the one place where
 * the SQL of transactional mode ({@code JdbcIdempotency}) and of lease mode ({@code JdbcLeaseStore})
 * is written, with one subclass per database, in that database's {@link Dialect} class, for what
 * differs (in the spirit of jdbi's per-database plugins). The texts are built once, when the instance is made, and are constants afterwards, so a
 * driver's statement cache (pgjdbc's per-connection cache of server-side prepared statements, for
 * one) sees the same text on every call.
 *
 * <p>Times are milliseconds since the Unix epoch on the database's clock ({@link
 * Dialect#nowMillis()}). Parameters are listed per statement; {@code pk} stands for the three
 * parameters principal, operation, idempotency key, in that order.
 *
 * <p>Immutable and thread-safe. SPI: a dialect ({@link Dialect#keyTableSql}) subclasses it with its
 * database's statements, which Idem's JDBC code reads; applications do not use it. Besides the
 * statements it holds the dialect's checks on their errors ({@link #wroteNoRow}, {@link
 * #isDuplicateKey}, {@link #isClaimWaitExceeded}).
 */
public abstract class KeyTableSql {

  /** The savepoint that {@link #claimThenSavepoint} sets on PostgreSQL, in the claim's round trip. */
  public static final String EFFECT_SAVEPOINT = "idem_before_effect";

  /** The columns of {@link #read}, in order; in that order. */
  static final String ROW_COLUMNS = "fingerprint, owner_token, lease_until, response, expires_at";

  protected static final String PK = " WHERE principal = ? AND operation = ? AND idem_key = ?";

  /** The dialect. */
  public final Dialect dialect;
  /** The table, a plain identifier already validated. */
  public final String table;
  /** {@link Dialect#nowMillis()}. */
  protected final String now;

  // ---------------------------------------------------------------- both modes

  /**
   * The record and the database's time, without a lock (in auto-commit mode: the latest committed
   * row). Parameters: pk. Columns: in that order.
   */
  public final String read;

  /**
   * Inside a transaction that has just met the row on its primary key: the latest committed row
   * even under REPEATABLE READ (MySQL: {@code LOCK IN SHARE MODE}; elsewhere as {@link #read}).
   * Parameters: pk.
   */
  public final String readLatest;

  // ---------------------------------------------------------------- transactional mode

  /**
   * The claim: a row {@code IN_PROGRESS} without owner or lease, replacing an expired or orphaned
   * row where the database can say so in the same statement (PostgreSQL, SQLite); on MySQL an
   * {@code INSERT IGNORE}, followed by {@link #expiredCheck} and {@link #takeover}. Parameters: pk,
   * fingerprint, retention (ms). One row changed means the row is this request's.
   */
  public final String claim;

  /** {@link #claim} followed, on PostgreSQL, by {@code SAVEPOINT} {@value #EFFECT_SAVEPOINT} in the same round trip. */
  public final String claimThenSavepoint;

  /**
   * PostgreSQL only ({@code null} elsewhere): {@link #read} and a claim in one round trip (pgjdbc
   * sends the statements of one prepared statement together), so that a create does not pay a
   * lookup of its own before its claim. The claim inserts only when the key has no live row that
   * may not be replaced, so a replay reads the row and locks nothing; when there is no such row it
   * is {@link #claim}, replacing an expired or orphaned row. Parameters: pk (the read), pk,
   * fingerprint, retention (ms), pk (the claim). Results: the read's row (if any), then the claim's
   * row count (one: the row is this request's).
   */
  public final @Nullable String lookupAndClaim;

  /** {@link #lookupAndClaim} followed by {@code SAVEPOINT} {@value #EFFECT_SAVEPOINT}, still one round trip. */
  public final @Nullable String lookupAndClaimThenSavepoint;

  /**
   * {@link #claim} with its wait for a concurrent attempt's uncommitted row of the same key bounded
   * ({@link #boundsClaimWait()}), or {@code null} where the database has no bound Idem can set for
   * one statement. PostgreSQL: {@code lock_timeout} is set for the claim alone (first parameter: the
   * wait as text, such as {@code "5ms"}) and put back to the session's value after it, in the same
   * round trip; results: two rows of {@code set_config}, the claim's count, one row. MariaDB: {@code
   * SET STATEMENT innodb_lock_wait_timeout = 0 FOR} the claim (no wait; no parameter of its own).
   * Past the bound the claim fails with {@link #isClaimWaitExceeded}: PostgreSQL 55P03, MariaDB 1205.
   */
  public final @Nullable String boundedClaim;

  /**
   * {@link #record} with its lock wait bounded as in {@link #boundedClaim}, or {@code null} where
   * this database has no such bound (SQLite). Same parameters as {@link #boundedClaim}'s, with
   * {@link #record}'s values.
   */
  public final @Nullable String boundedRecord;

  /** {@link #boundedClaim} then {@code SAVEPOINT} {@value #EFFECT_SAVEPOINT} (PostgreSQL), one round trip. */
  public final @Nullable String boundedClaimThenSavepoint;

  /** {@link #lookupAndClaim} with the claim's wait bounded as in {@link #boundedClaim} (PostgreSQL only). */
  public final @Nullable String boundedLookupAndClaim;

  /** {@link #boundedLookupAndClaim} then {@code SAVEPOINT} {@value #EFFECT_SAVEPOINT}, one round trip. */
  public final @Nullable String boundedLookupAndClaimThenSavepoint;

  /**
   * {@code KEY_LAST}: the key's row, completed, with its response; replacing an expired or orphaned
   * row like {@link #claim}. Parameters: pk, fingerprint, status (NULL when protected), response,
   * retention (ms).
   */
  public final String record;

  /**
   * MySQL only ({@code null} elsewhere): whether the row that refused the {@code INSERT IGNORE} may be
   * replaced (expired, or a claim a broken transaction left), read under the shared lock the insert
   * took. Parameters: pk. One boolean column.
   */
  public final @Nullable String expiredCheck;

  /** MySQL only: replaces a replaceable row with a claim. Parameters: fingerprint, retention, pk. */
  public final @Nullable String takeover;

  /**
   * MySQL only: replaces a replaceable row with a completed one. Parameters: fingerprint, status,
   * response, retention, pk.
   */
  public final @Nullable String recordTakeover;

  /**
   * Stores the response in this transaction's claim, and in no other row: only a record still
   * {@code IN_PROGRESS} without a lease (on MySQL a deadlock inside the effect rolls the claim back
   * and the session goes on in auto-commit, where a completion of whatever the row has become
   * would overwrite a duplicate's committed answer; it changes no row instead, and the attempt
   * fails with nothing stored). The expiry is moved only when {@code
   * retention} from now is later than the one the claim wrote (which the caller sets a margin past
   * {@code retention}): a completion soon after its claim rewrites no indexed column, so PostgreSQL
   * can make it a HOT update. Parameters: status, response, retention (ms) twice, pk.
   */
  public final String complete;

  /**
   * PostgreSQL only ({@code null} elsewhere), in a transaction Idem owns: {@link #complete} and the
   * {@code COMMIT} in one round trip. When the completion changes no row the statement fails (SQLState
   * {@value #NO_ROW_STATE}, the message quoting {@value #NO_ROW_MARKER}; see {@link #wroteNoRow})
   * before the {@code COMMIT}, which the server then skips, so nothing commits without its key.
   * Parameters: as {@link #complete}.
   */
  public final @Nullable String completeThenCommit;

  /**
   * PostgreSQL only ({@code null} elsewhere), in a transaction Idem owns: {@link #record} and the
   * {@code COMMIT} in one round trip; as {@link #completeThenCommit}, a record that inserts nothing
   * (a racing duplicate's live record holds the key) fails as {@link #wroteNoRow} tells, and
   * commits nothing. Parameters: as {@link #record}.
   */
  public final @Nullable String recordThenCommit;

  /**
   * SQLState of {@link #completeThenCommit} and {@link #recordThenCommit} when they wrote no row:
   * invalid text representation, for a cast of {@link #NO_ROW_MARKER} to an integer.
   */
  public static final String NO_ROW_STATE = "22P02";

  /** The text whose failed cast reports that the key statement wrote no row; the server's message quotes it. */
  public static final String NO_ROW_MARKER = "idem: no key row written";

  /**
   * @return whether {@code e}, or an SQL error in its causes, is the failure of {@link
   *     #completeThenCommit} or {@link #recordThenCommit} that wrote no row (and so did not commit),
   *     rather than an error of the same kind raised by the application at the {@code COMMIT}
   */
  public static boolean wroteNoRow(SQLException e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLException && NO_ROW_STATE.equals(((SQLException) t).getSQLState())
          && t.getMessage() != null && t.getMessage().contains(NO_ROW_MARKER)) {
        return true;
      }
    }
    return false;
  }

  /** Deletes the key's row, whatever its state. Parameters: pk. */
  public final String delete;

  // ---------------------------------------------------------------- lease mode

  /**
   * A new claim for an absent key: inserts nothing when the key has a row (PostgreSQL and SQLite
   * {@code ON CONFLICT DO NOTHING}, MySQL {@code INSERT IGNORE}: 0 rows, not an error). The record
   * expires {@code lease + retention} after the claim, so that a completion within the lease need
   * not move the expiry (see {@link #leaseComplete}). Parameters: pk, fingerprint, owner, lease
   * (ms), lease + retention (ms).
   */
  public final String leaseInsert;

  /**
   * PostgreSQL only ({@code null} elsewhere): {@link #read} and {@link #leaseInsert} in one round
   * trip (one prepared statement; in auto-commit mode the server runs both in one implicit
   * transaction). The insert does nothing when the key has a row, without locking it, so a replay
   * or a key held by another owner is still answered from the read alone. Parameters: pk, then
   * those of {@link #leaseInsert}. Results: the read's row (if any), then the insert's row count.
   */
  public final @Nullable String leaseReadThenInsert;

  /**
   * A new claim replacing an expired row, only while it is expired. Parameters: fingerprint, owner,
   * lease (ms), lease + retention (ms), pk.
   */
  public final String leaseOverwrite;

  /**
   * Renews the owner's own live claim (a retry after a write whose outcome was unknown): a new
   * lease, and the expiry moved no earlier than {@code lease + retention} from now. Parameters:
   * lease (ms), lease + retention (ms) twice, pk, owner.
   */
  public final String leaseRenew;

  /**
   * Takes over a live claim of another owner whose lease has run out, with the same fingerprint,
   * only while that is still so (a racing taker makes it 0 rows). A claim without a lease (a
   * transactional claim a broken transaction left) counts as run out. Parameters: owner, lease
   * (ms), lease + retention (ms) twice, pk, fingerprint.
   */
  public final String leaseTakeOver;

  /**
   * Completes the owner's live claim (fencing). The expiry is moved only when {@code retention}
   * from now is later than the one the claim wrote ({@code lease + retention} after it): a
   * completion within the lease rewrites no indexed column, so PostgreSQL can make it a HOT update.
   * A record thus lives at least {@code retention} after its completion, and at most the lease
   * longer. Parameters: status, response, retention (ms) twice, pk, owner.
   */
  public final String leaseComplete;

  /** Deletes the owner's live, uncompleted claim (fencing). Parameters: pk, owner. */
  public final String leaseRelease;

  /** Deletes at most {@code batch} expired rows. Parameters: batch. */
  public final String purge;

  /**
   * PostgreSQL and MariaDB ({@code null} elsewhere): {@link #purge} from a lower bound on {@code
   * expires_at}, so that a purge's next batch starts its index scan where the last one ended. A
   * deleted row's index entries stay until a vacuum (PostgreSQL) or InnoDB's purge thread (MariaDB)
   * removes them, and {@link #purge}'s scan from the front of the {@code expires_at} index walks
   * again over those of every batch before it, a cost that grows with the purge (PostgreSQL, 10^7
   * expired rows beside traffic: 4,300 rows/s with {@link #purge}, 35,000 with this; MariaDB, 2·10^6
   * expired rows while another session held a read view open, which keeps InnoDB's purge thread
   * from removing them: about 14,000 rows/s with {@link #purge}, 70,000 with this;
   * docs/operations.md). Its upper bound is fixed for the statement, so both ends bound the index
   * scan. Parameters: the bound (ms since the epoch, inclusive: rows of the last batch's latest
   * expiry that it left are still taken), batch. Result rows: each gives a number of deleted rows
   * and the latest expiry among them ({@code NULL} if none); the batch deleted the sum of the first
   * column, and the next starts from the greatest second. PostgreSQL answers one row (a count and
   * a maximum), MariaDB one row per deleted row ({@code DELETE ... RETURNING 1, expires_at}: its
   * {@code DELETE} cannot be aggregated over, and MySQL has no {@code RETURNING}).
   */
  public final @Nullable String purgeFrom;

  protected KeyTableSql(Dialect dialect, String table) {
    this.dialect = dialect;
    this.table = table;
    this.now = dialect.nowMillis();
    String t = table;
    this.read = "SELECT " + ROW_COLUMNS + ", " + now + " FROM " + t + PK;
    this.readLatest = read + sharedLock();

    // A row may be replaced only when it expired, or is a claim that a broken transaction left.
    String replaceable = "expires_at <= " + now + " OR (state = 'IN_PROGRESS' AND lease_until IS NULL)";
    String claimValues =
        " (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
            + " VALUES (?, ?, ?, ?, 'IN_PROGRESS', " + now + ", " + now + " + ?)";
    String recordValues =
        " (principal, operation, idem_key, fingerprint, state, status, response, created_at, expires_at)"
            + " VALUES (?, ?, ?, ?, 'COMPLETED', ?, ?, " + now + ", " + now + " + ?)";
    String replaceOnConflict = replaceOnConflict();
    if (replaceOnConflict != null) {
      this.claim = "INSERT INTO " + t + " AS k" + claimValues + replaceOnConflict;
      this.record = "INSERT INTO " + t + " AS k" + recordValues + replaceOnConflict;
      this.expiredCheck = null;
      this.takeover = null;
      this.recordTakeover = null;
    } else {
      this.claim = insertIgnoringDuplicates() + t + claimValues;
      this.record = insertIgnoringDuplicates() + t + recordValues;
      this.expiredCheck = "SELECT " + replaceable + " FROM " + t + PK + sharedLock();
      this.takeover =
          "UPDATE " + t + " SET fingerprint = ?, state = 'IN_PROGRESS', owner_token = NULL,"
              + " lease_until = NULL, status = NULL, response = NULL, created_at = " + now + ","
              + " expires_at = " + now + " + ?" + PK + " AND (" + replaceable + ")";
      this.recordTakeover =
          "UPDATE " + t + " SET fingerprint = ?, state = 'COMPLETED', owner_token = NULL,"
              + " lease_until = NULL, status = ?, response = ?, created_at = " + now + ","
              + " expires_at = " + now + " + ?" + PK + " AND (" + replaceable + ")";
    }
    this.claimThenSavepoint = savepointAfterClaim() ? claim + "; SAVEPOINT " + EFFECT_SAVEPOINT : claim;
    // The bound is put back before the savepoint: a rollback to the savepoint would otherwise undo
    // the restore and leave the claim's short lock_timeout on the effect's statements.
    String before = boundBefore();
    String after = boundAfter();
    this.boundedClaim = before == null ? null : before + claim + after;
    this.boundedRecord = before == null ? null : before + record + after;
    this.boundedClaimThenSavepoint = boundedClaim == null ? null
        : savepointAfterClaim() ? boundedClaim + "; SAVEPOINT " + EFFECT_SAVEPOINT : boundedClaim;
    if (savepointAfterClaim()) {
      // The claim of lookupAndClaim: as claim, but only when no live, irreplaceable row exists.
      String conditionalClaim = "INSERT INTO " + t + " AS k"
          + " (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
          + " SELECT ?, ?, ?, ?, 'IN_PROGRESS', " + now + ", " + now + " + ?"
          + " WHERE NOT EXISTS (SELECT 1 FROM " + t + PK + " AND expires_at > " + now
          + " AND NOT (state = 'IN_PROGRESS' AND lease_until IS NULL))" + replaceOnConflict;
      this.lookupAndClaim = read + "; " + conditionalClaim;
      this.lookupAndClaimThenSavepoint = lookupAndClaim + "; SAVEPOINT " + EFFECT_SAVEPOINT;
      this.boundedLookupAndClaim = before == null ? null : before + read + "; " + conditionalClaim + after;
      this.boundedLookupAndClaimThenSavepoint = boundedLookupAndClaim == null ? null
          : boundedLookupAndClaim + "; SAVEPOINT " + EFFECT_SAVEPOINT;
    } else {
      this.lookupAndClaim = null;
      this.lookupAndClaimThenSavepoint = null;
      this.boundedLookupAndClaim = null;
      this.boundedLookupAndClaimThenSavepoint = null;
    }
    String laterExpiry = "expires_at = CASE WHEN expires_at < " + now + " + ? THEN " + now + " + ? ELSE expires_at END";
    // Retention counts from completion, so an effect slower than the retention still leaves a
    // live record for the duplicates that waited on it.
    // created_at becomes the completion's time: a completed record's created_at is when it
    // completed (KeyStatus.Completed#completedAt); the column is not indexed, so this keeps a HOT update.
    // Only this transaction's own claim (IN_PROGRESS, no lease): on MySQL a deadlock inside the
    // effect rolls the whole transaction back, claim included, and the session goes on in
    // auto-commit; a completion of any row would then overwrite a duplicate's committed answer.
    this.complete = "UPDATE " + t + " SET state = 'COMPLETED', status = ?, response = ?, created_at = " + now + ", " + laterExpiry + PK
        + " AND state = 'IN_PROGRESS' AND lease_until IS NULL";
    if (savepointAfterClaim()) {
      // One row written, or an error that stops the COMMIT after it from running: a cast that fails
      // on a marker of Idem's own, so that it is told apart from the same kind of error raised by
      // the application at the COMMIT (a deferred trigger of its own, say).
      String rowWritten = " RETURNING 1) SELECT CAST(CASE WHEN (SELECT COUNT(*) FROM written) = 1 THEN '1' ELSE '"
          + NO_ROW_MARKER + "' END AS INTEGER); COMMIT";
      this.completeThenCommit = "WITH written AS (" + complete + rowWritten;
      this.recordThenCommit = "WITH written AS (" + record + rowWritten;
    } else {
      this.completeThenCommit = null;
      this.recordThenCommit = null;
    }
    this.delete = "DELETE FROM " + t + PK;

    String live = " AND expires_at > " + now;
    String leaseValues =
        " (principal, operation, idem_key, fingerprint, state, owner_token, lease_until, created_at, expires_at)"
            + " VALUES (?, ?, ?, ?, 'IN_PROGRESS', ?, " + now + " + ?, " + now + ", " + now + " + ?)";
    this.leaseInsert = replaceOnConflict != null
        ? "INSERT INTO " + t + leaseValues + " ON CONFLICT (principal, operation, idem_key) DO NOTHING"
        : insertIgnoringDuplicates() + t + leaseValues;
    this.leaseReadThenInsert = savepointAfterClaim() ? read + "; " + leaseInsert : null;
    this.leaseOverwrite =
        "UPDATE " + t + " SET fingerprint = ?, state = 'IN_PROGRESS', owner_token = ?, lease_until = " + now + " + ?,"
            + " status = NULL, response = NULL, created_at = " + now + ", expires_at = " + now + " + ?"
            + PK + " AND expires_at <= " + now;
    this.leaseRenew =
        "UPDATE " + t + " SET lease_until = " + now + " + ?, " + laterExpiry
            + PK + " AND owner_token = ? AND state = 'IN_PROGRESS'" + live;
    this.leaseTakeOver =
        "UPDATE " + t + " SET owner_token = ?, lease_until = " + now + " + ?, " + laterExpiry
            + PK + " AND fingerprint = ? AND state = 'IN_PROGRESS'" + live + " AND COALESCE(lease_until, 0) <= " + now;
    this.leaseComplete =
        "UPDATE " + t + " SET state = 'COMPLETED', status = ?, response = ?, lease_until = NULL, created_at = " + now + ", "
            + laterExpiry
            + PK + " AND owner_token = ? AND state = 'IN_PROGRESS'" + live;
    this.leaseRelease = "DELETE FROM " + t + PK + " AND owner_token = ? AND state = 'IN_PROGRESS'" + live;
    this.purge = purge();
    this.purgeFrom = purgeFrom();
  }

  /**
   * The upsert tail that replaces an expired or orphaned row in the claim's own statement (table
   * alias {@code k}), or {@code null} when the database has none usable (MySQL: {@code ON DUPLICATE
   * KEY UPDATE} reports "unchanged" and "inserted" alike under the {@code CLIENT_FOUND_ROWS} flag that
   * its drivers set by default).
   */
  protected @Nullable String replaceOnConflict() {
    return " ON CONFLICT (principal, operation, idem_key) DO UPDATE SET"
        + " fingerprint = excluded.fingerprint, state = excluded.state, owner_token = NULL,"
        + " lease_until = NULL, status = excluded.status, response = excluded.response,"
        + " created_at = excluded.created_at, expires_at = excluded.expires_at"
        + " WHERE k.expires_at <= excluded.created_at OR (k.state = 'IN_PROGRESS' AND k.lease_until IS NULL)";
  }

  /** @return the start of an insert that reports a duplicate key as 0 rows (MySQL only) */
  protected String insertIgnoringDuplicates() {
    throw new UnsupportedOperationException(dialect + " upserts instead");
  }

  /** @return the clause that makes a read see, and lock shared, the latest committed row ({@code ""} if none is needed) */
  protected String sharedLock() {
    return "";
  }

  /** @return what goes before a claim to bound its lock wait, or {@code null} when this database has no such bound */
  protected @Nullable String boundBefore() {
    return null;
  }

  /** @return what goes after a claim that {@link #boundBefore} bounded ({@code ""} when nothing) */
  protected String boundAfter() {
    return "";
  }

  /** @return how many result sets {@link #boundBefore} adds before the claim's own results */
  public int boundResultSets() {
    return 0;
  }

  /** @return whether {@link #boundedClaim} takes the wait as its first parameter (PostgreSQL) */
  public boolean boundTakesWait() {
    return false;
  }

  /**
   * @return whether {@code e} says the bounded claim gave up waiting for a concurrent attempt's row
   *     lock ({@link Dialect#isLockWaitExceeded})
   */
  public final boolean isClaimWaitExceeded(SQLException e) {
    return dialect.isLockWaitExceeded(e);
  }

  /** @return whether the claim can set a savepoint in its own round trip (PostgreSQL) */
  protected boolean savepointAfterClaim() {
    return false;
  }

  /** @return {@link #purgeFrom}, or {@code null} where {@link #purge} is all there is */
  protected @Nullable String purgeFrom() {
    return null;
  }

  protected String purge() {
    return "DELETE FROM " + table + " WHERE (principal, operation, idem_key) IN"
        + " (SELECT principal, operation, idem_key FROM " + table
        + " WHERE expires_at <= " + now + " ORDER BY expires_at LIMIT ?)"
        + " AND expires_at <= " + now;
  }

  /**
   * The statements that create this table and its index when missing ({@code CREATE ... IF NOT
   * EXISTS}): the dialect's shipped schema file ({@link Dialect#schemaResource()}) with this
   * table's name, comments removed, in order. For code that sends them through another API than
   * JDBC (idem-r2dbc's lease store), so that both create the same table; Idem's JDBC code runs
   * them through {@code SchemaCreation}, which also serialises concurrent creators.
   *
   * @return a new list of the statements, never empty
   */
  public final List<String> schemaStatements() {
    return SchemaScript.statements(dialect.schemaResource(), table);
  }

  /**
   * PostgreSQL: the key of the transaction-scoped advisory lock under which idem-jdbc's table
   * creation runs {@link #schemaStatements()} (it polls {@code pg_try_advisory_xact_lock} with this
   * key, see {@code SchemaCreation}); MySQL and MariaDB use a named {@code GET_LOCK} instead, and
   * this key means nothing there. Code that sends the statements through another API
   * (idem-r2dbc) takes the same lock, so that its creators and idem-jdbc's run one after the other
   * rather than racing in the catalog, where of two sessions that both find the table missing one
   * fails with SQLState 23505, 42P07 or 42710.
   *
   * @return FNV-1a (64 bits) over the UTF-8 bytes of {@code "idem.schema:"} followed by the
   *     table's name lower-cased ({@link java.util.Locale#ROOT}); the same in every process and
   *     version
   */
  public final long schemaLockKey() {
    return SchemaLock.key(table);
  }

  /**
   * Whether {@code e} reports a duplicate key on this database: {@link Dialect#isDuplicateKey}.
   */
  public final boolean isDuplicateKey(SQLException e) {
    return dialect.isDuplicateKey(e);
  }
}
