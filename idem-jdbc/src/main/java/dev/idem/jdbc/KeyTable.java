package dev.idem.jdbc;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.ResponseProtection;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.internal.KeyRow;
import dev.idem.jdbc.dialect.KeyTableSql;
import dev.idem.jdbc.internal.LogRef;
import dev.idem.jdbc.internal.SchemaCheck;
import dev.idem.jdbc.internal.SchemaScript;
import dev.idem.jdbc.internal.SqlRunner;
import dev.idem.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The key table: one table of idempotency keys, their fingerprints, claims and stored responses,
 * with everything both engines do to it besides running effects. Its statements per dialect, with
 * their parameters bound ({@link Statements}, over {@link KeyTableSql}); its schema, created on
 * demand and checked once per dialect ({@link #ensureSchema}); its purge of expired records and
 * the release of one record. {@link JdbcIdempotency} (transactional mode) and {@link
 * JdbcLeaseStore} (lease mode) each hold one; neither builds the other.
 *
 * <p>Immutable after construction except for the per-dialect statements, "schema checked" marks
 * and statements for a bounded claim on the connected server, each made once, idempotently;
 * thread-safe. A {@link Connection} passed in is
 * used by the calling thread only.
 */
final class KeyTable {

  private final String name;
  private final boolean createSchema;
  private final ResponseProtection protection;
  /** The statements per dialect, made at the first use of each. */
  private final Map<Dialect, Statements> statements = new ConcurrentHashMap<>();
  /** The statements per dialect for a bounded claim, made for the server of the first such claim ({@link Dialect#keyTableSql(String, Connection)}). */
  private final Map<Dialect, Statements> boundedStatements = new ConcurrentHashMap<>();
  private final Map<Dialect, Boolean> schemaReady = new ConcurrentHashMap<>();

  /**
   * @param name a plain SQL identifier, already validated ({@link JdbcIdempotency.Builder#table})
   * @param createSchema whether {@link #ensureSchema} creates a missing table
   * @param protection how stored responses are sealed and opened, never {@code null}
   */
  KeyTable(String name, boolean createSchema, ResponseProtection protection) {
    this.name = name;
    this.createSchema = createSchema;
    this.protection = protection;
  }

  /** @return the table's name */
  String name() {
    return name;
  }

  /**
   * The one rule of the transactional engine for SQLite ({@link Dialect#readsReplaysOutsideTransactions}):
   * where a replay is read. On SQLite a read
   * inside a transaction before its first write runs on a snapshot that may be older than the
   * latest commit, and the claim's write takes the database's single write lock just to find a
   * stored response; so there a replay is read on a connection in auto-commit, before any
   * transaction ({@link TransactionalIdempotency} does), and never inside a caller's transaction
   * before the claim ({@link JdbcIdempotency#execute(Connection, IdempotentRequest, Effect)}
   * leaves it to the claim). Elsewhere a read inside the transaction sees the latest commit.
   *
   * @return whether replays on {@code dialect} are read only outside a transaction
   */
  static boolean readsReplaysOutsideTransactions(Dialect dialect) {
    return dialect.readsReplaysOutsideTransactions();
  }

  /** @return the statements for {@code dialect}, never {@code null} */
  Statements statements(Dialect dialect) {
    return statements.computeIfAbsent(dialect, d -> new Statements(d.keyTableSql(name), protection));
  }

  /**
   * Answers a request from its key's live record: a replay of the stored response.
   *
   * @param record a live record of the request's scope and key, not orphaned
   * @return the replayed outcome, never {@code null}
   * @throws IdempotencyKeyReusedException if the record has another fingerprint
   * @throws RequestInProgressException if it is a lease-mode claim without a response (another
   *     component sharing the table)
   * @throws dev.idem.core.StoredResponseUnreadableException if its stored response cannot be read
   */
  Outcome answer(KeyRow record, IdempotentRequest request) {
    if (!record.fingerprint.equals(request.fingerprint().hex())) {
      throw new IdempotencyKeyReusedException(request.scope(), request.key());
    }
    if (record.response == null) {
      // A lease-mode claim of another component sharing this table.
      long seconds = Math.max(1, (record.leaseRemainingMillis() + 999) / 1000);
      throw new RequestInProgressException(request.key(), Duration.ofSeconds(seconds));
    }
    // The fingerprints are equal here, so the request's identity is the record's identity.
    return Outcome.replayed(protection.open(request.scope(), request.key(), request.fingerprint(), record.response));
  }

  /**
   * @return the answer of the key's live record (a replay), read without a lock, or {@code null}
   *     if it has none (none, expired, or a claim a broken transaction left)
   * @throws IdempotencyKeyReusedException, RequestInProgressException as {@link #answer}
   * @throws IdemStoreException if the read fails
   */
  @Nullable Outcome answerIfLive(Connection connection, Statements sql, IdempotentRequest request) {
    KeyRow existing;
    try {
      existing = sql.lookup(connection, request);
    } catch (SQLException e) {
      throw storeFailure("lookup failed", e);
    }
    return existing == null || existing.orphaned() ? null : answer(existing, request);
  }

  /** @return the key's live record, or {@code null} if none or if the read failed (an earlier failure is the one to report) */
  static @Nullable KeyRow lookupQuietly(Connection connection, Statements sql, IdempotentRequest request) {
    try {
      return sql.lookup(connection, request);
    } catch (SQLException e) {
      return null;
    }
  }

  /**
   * @param boundedClaim whether the claim bounds its lock wait ({@link JdbcIdempotency.Builder#claimLockWait})
   * @return the statements for the connection's database: with a bounded claim, those for its server
   *     (MySQL's dialect on a MariaDB server bounds the claim), decided at the first bounded claim
   */
  Statements statementsFor(Connection connection, Dialect dialect, boolean boundedClaim) {
    if (!boundedClaim) {
      return statements(dialect);
    }
    Statements known = boundedStatements.get(dialect);
    if (known == null) {
      try {
        known = new Statements(dialect.keyTableSql(name, connection), protection);
      } catch (SQLException e) {
        throw storeFailure("cannot read the database's product name", e);
      }
      Statements raced = boundedStatements.putIfAbsent(dialect, known);
      known = raced != null ? raced : known;
    }
    return known;
  }

  /** Deletes the key's record in the connection's transaction; as {@link JdbcIdempotency#release}. */
  boolean release(Connection connection, IdempotentRequest request) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(request, "request");
    Statements sql = statements(Dialect.of(connection));
    try {
      return sql.release(connection, request);
    } catch (SQLException e) {
      throw storeFailure("releasing the key failed", e);
    }
  }

  /** Deletes expired records in batches of at most {@code batchSize}; as {@link JdbcIdempotency#purgeExpired}. */
  long purgeExpired(Connection connection, int batchSize) {
    if (batchSize < 1 || batchSize > 100_000) {
      throw new IllegalArgumentException("batchSize must be between 1 and 100000, was " + batchSize);
    }
    Dialect dialect = Dialect.of(connection);
    if (!autoCommit(connection)) {
      throw new IllegalStateException("purgeExpired needs a connection in auto-commit mode: each batch commits on its own");
    }
    if (!tableExists(connection)) {
      return 0;
    }
    // the statements for the connection's server (MySQL's dialect on a MariaDB server has MariaDB's
    // purge): PostgreSQL's and MariaDB's batches each start where the last one ended (see
    // KeyTableSql#purgeFrom); the other dialects' delete from the front of the expiry index each time
    KeyTableSql sql = statementsFor(connection, dialect, true).sql;
    String purgeFrom = sql.purgeFrom;
    boolean keyset = purgeFrom != null;
    long total = 0;
    try (PreparedStatement ps = connection.prepareStatement(purgeFrom != null ? purgeFrom : sql.purge)) {
      long from = Long.MIN_VALUE;
      while (true) {
        long deleted;
        if (keyset) {
          ps.setLong(1, from);
          ps.setInt(2, batchSize);
          deleted = 0;
          // execute, not executeQuery: MySQL Connector/J refuses a DELETE there, RETURNING or not
          // (MariaDB's form, which it sends to a MariaDB server too)
          if (!ps.execute()) {
            throw new SQLException("the purge statement answered no rows: " + purgeFrom);
          }
          try (ResultSet rs = ps.getResultSet()) {
            while (rs.next()) {
              deleted += rs.getLong(1);
              long latest = rs.getLong(2);
              from = rs.wasNull() ? from : Math.max(from, latest);
            }
          }
        } else {
          ps.setInt(1, batchSize);
          deleted = ps.executeUpdate();
        }
        total += deleted;
        if (deleted < batchSize) {
          return total;
        }
      }
    } catch (SQLException e) {
      throw storeFailure("purge failed after " + total + " records", e);
    }
  }

  /** Creates the table and its index if missing, then checks it; as {@link JdbcIdempotency#createSchema}. */
  void createSchema(Connection connection) {
    runSchemaScript(connection, false);
    checkSchema(connection);
  }

  /** Checks that the table compares identities byte for byte; as {@link JdbcIdempotency#checkSchema}. */
  void checkSchema(Connection connection) {
    SchemaCheck.verify(connection, Dialect.of(connection), name);
  }

  /** @param ifMissing the table was found missing: a creator that made it meanwhile leaves nothing to do */
  private void runSchemaScript(Connection connection, boolean ifMissing) {
    Dialect dialect = Dialect.of(connection);
    try {
      // Safe when other processes create the same table at the same moment (SchemaCreation).
      List<String> statements = SchemaScript.statements(dialect.schemaResource(), name);
      if (ifMissing) {
        SchemaCreation.runIfMissing(connection, name, statements);
      } else {
        SchemaCreation.run(connection, name, statements);
      }
    } catch (SQLException e) {
      throw storeFailure("creating table " + name + " failed", e);
    }
  }

  /** @return whether {@link #ensureSchema} found or made the table for the dialect already */
  boolean schemaReady(Dialect dialect) {
    return schemaReady.containsKey(dialect);
  }

  /**
   * Makes sure the table can be used on this connection's database before the first statement:
   * checks an existing table once per dialect, and creates a missing one when allowed (in a
   * caller's transaction inside a savepoint, and never on MySQL, whose DDL would commit it).
   *
   * @param autoCommit whether the connection is outside a caller's transaction
   * @throws IdemStoreException if the table compares identities loosely, or cannot be created
   */
  void ensureSchema(Connection connection, Dialect dialect, boolean autoCommit) {
    // No Java lock is held while DDL runs: DDL waits on database locks, and a Java lock held across
    // it can close a cycle the database cannot see (a joined transaction that created the table
    // and is not finished, and another thread waiting for it while holding the lock).
    if (schemaReady.containsKey(dialect)) {
      return;
    }
    if (tableExists(connection)) {
      // A table created by an earlier version or by hand: refused, with its migration, if it
      // compares keys or principals loosely.
      SchemaCheck.verify(connection, dialect, name);
      schemaReady.put(dialect, Boolean.TRUE);
      return;
    }
    if (!createSchema) {
      return; // the statements fail naming the missing table; checked again at the next call
    }
    if (!autoCommit) {
      if (dialect.ddlCommitsTransaction()) {
        throw new IdemStoreException(
            "table " + name + " does not exist, and " + dialect.name() + " DDL would commit the caller's open transaction:"
                + " create it first (createSchema on an auto-commit connection, or " + schemaFile(dialect) + " in your migrations)",
            null);
      }
      // Inside the caller's transaction: the DDL vanishes if the caller rolls back, so the table is
      // not marked ready here. A savepoint keeps a concurrent creation's failure from aborting the
      // caller's transaction.
      createInsideSavepoint(connection);
      return;
    }
    try {
      runSchemaScript(connection, true); // found missing above
    } catch (IdemStoreException e) {
      // Another process created the table at the same moment (PostgreSQL reports a unique
      // violation on its catalog); the table exists either way if the catalog shows it.
      if (!tableExists(connection)) {
        throw e;
      }
    }
    SchemaCheck.verify(connection, dialect, name);
    schemaReady.put(dialect, Boolean.TRUE);
  }

  /** @return the file name of the dialect's schema, such as {@code mysql.sql} */
  private static String schemaFile(Dialect dialect) {
    String resource = dialect.schemaResource();
    return resource.substring(resource.lastIndexOf('/') + 1);
  }

  private void createInsideSavepoint(Connection connection) {
    Savepoint savepoint;
    try {
      savepoint = connection.setSavepoint();
    } catch (SQLException e) {
      throw storeFailure("cannot set a savepoint to create table " + name, e);
    }
    try {
      runSchemaScript(connection, true);
      connection.releaseSavepoint(savepoint);
    } catch (IdemStoreException | SQLException e) {
      try {
        connection.rollback(savepoint);
      } catch (SQLException ignored) {
        // the transaction is beyond repair; the check below reports it
      }
      if (!tableExists(connection)) {
        throw e instanceof IdemStoreException ? (IdemStoreException) e : storeFailure("creating table " + name + " failed", (SQLException) e);
      }
    }
  }

  /** @return whether the catalog shows the table where the connection's statements look; as {@link JdbcIdempotency#tableExists} */
  boolean tableExists(Connection connection) {
    try {
      return Dialect.of(connection).tableExists(connection, name);
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * @return whether the connection is outside a caller's transaction: in auto-commit mode, and not
   *     inside a transaction begun with SQL ({@code BEGIN}, {@code START TRANSACTION}) that the
   *     driver reports ({@link Dialect#inTransactionBegunBySql}); such a transaction is joined as a
   *     caller's, never committed by Idem
   */
  boolean autoCommit(Connection connection) {
    try {
      return connection.getAutoCommit() && !Dialect.of(connection).inTransactionBegunBySql(connection);
    } catch (SQLException e) {
      throw storeFailure("cannot read the auto-commit mode", e);
    }
  }

  /**
   * @return the failure to throw: {@link IdemStoreException} (the store failed; retry later), or,
   *     when the statement failed because the caller's transaction had already been aborted by an
   *     earlier error of the caller's own (PostgreSQL, 25P02), {@link IllegalStateException}: that
   *     is the caller's error, never a store outage
   */
  RuntimeException storeFailure(String what, SQLException e) {
    if (Transactions.isAborted(e)) {
      return new IllegalStateException(
          "idempotency store (" + name + "): " + what + ": the transaction was already aborted by an earlier SQL error"
              + " (PostgreSQL rejects every statement until a rollback); roll it back, or set a savepoint around the"
              + " statement that may fail [SQLState " + e.getSQLState() + "]", e);
    }
    return new IdemStoreException(
        "idempotency store (" + name + "): " + what + ": " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
  }

  /**
   * What {@link Statements#lookupAndClaim} found.
   *
   * @param claimed whether the row is now this request's
   * @param seen the live row the lookup saw, or {@code null}
   */
  record ClaimAttempt(boolean claimed, @Nullable KeyRow seen) {}

  /** Transactional mode's statements ({@link KeyTableSql}) with their parameters bound. */
  static final class Statements {
    final KeyTableSql sql;
    final ResponseProtection protection;

    Statements(KeyTableSql sql, ResponseProtection protection) {
      this.sql = sql;
      this.protection = protection;
    }

    /**
     * @param savepoint on PostgreSQL, whether to set {@link KeyTableSql#EFFECT_SAVEPOINT} right after
     *     the claim, sent with it (pgjdbc sends the statements of one prepared statement in one round trip)
     */
    boolean claim(Connection c, IdempotentRequest r, Duration retention, boolean savepoint) throws SQLException {
      return claim(c, r, retention, savepoint, null);
    }

    /**
     * @param wait the bound of the claim's lock wait as PostgreSQL writes it ({@code "5ms"}), or
     *     {@code null} for an unbounded claim; only where {@link KeyTableSql#boundedClaim} exists
     */
    boolean claim(Connection c, IdempotentRequest r, Duration retention, boolean savepoint, @Nullable String wait) throws SQLException {
      String fingerprint = r.fingerprint().hex();
      long keep = claimExpiry(retention);
      if (wait == null) {
        return insertOrTakeOver(c, r, savepoint ? sql.claimThenSavepoint : sql.claim, new Object[] {fingerprint, keep}, 0, null,
            sql.takeover, new Object[] {fingerprint, keep});
      }
      return insertOrTakeOver(c, r, present(savepoint ? sql.boundedClaimThenSavepoint : sql.boundedClaim, "bounded claim"),
          new Object[] {fingerprint, keep},
          sql.boundResultSets(), sql.boundTakesWait() ? wait : null, sql.takeover, new Object[] {fingerprint, keep});
    }

    /** @return how long after the claim its record expires: the retention and {@link JdbcIdempotency#EXPIRY_MARGIN} */
    private static long claimExpiry(Duration retention) {
      return retention.toMillis() + JdbcIdempotency.EXPIRY_MARGIN.toMillis();
    }

    /**
     * PostgreSQL: {@link KeyTableSql#lookupAndClaim}, one round trip.
     *
     * @return whether the row is now this request's, and the live row the read saw
     */
    ClaimAttempt lookupAndClaim(Connection c, IdempotentRequest r, Duration retention, boolean savepoint, @Nullable String wait)
        throws SQLException {
      Object[] key = key(r);
      Object[] params = concat(concat(key, key), new Object[] {r.fingerprint().hex(), claimExpiry(retention), key[0], key[1], key[2]});
      SqlRunner.RowThenCount found = wait == null
          ? SqlRunner.readThenWrite(c, present(savepoint ? sql.lookupAndClaimThenSavepoint : sql.lookupAndClaim, "lookup and claim"), params)
          : SqlRunner.readThenWriteAfter(c,
              present(savepoint ? sql.boundedLookupAndClaimThenSavepoint : sql.boundedLookupAndClaim, "bounded lookup and claim"),
              sql.boundResultSets(), concat(new Object[] {wait}, params));
      return new ClaimAttempt(found.written() == 1, found.row() == null ? null : live(found.row()));
    }

    /** {@link JdbcIdempotency.Strategy#KEY_LAST}: inserts the key's row completed, with its response. */
    boolean record(Connection c, IdempotentRequest r, StoredResponse response, Duration retention) throws SQLException {
      return record(c, r, response, retention, null);
    }

    /**
     * @param wait the bound of the insert's lock wait as PostgreSQL writes it ({@code "5ms"}), or
     *     {@code null} for an unbounded insert; only where {@link KeyTableSql#boundedRecord} exists
     */
    boolean record(Connection c, IdempotentRequest r, StoredResponse response, Duration retention, @Nullable String wait)
        throws SQLException {
      String fingerprint = r.fingerprint().hex();
      byte[] encoded = protection.seal(r.scope(), r.key(), r.fingerprint(), response);
      Integer status = protection.clearStatus(response);
      long keep = retention.toMillis();
      Object[] values = {fingerprint, status, encoded, keep};
      if (wait == null) {
        return insertOrTakeOver(c, r, sql.record, values, 0, null, sql.recordTakeover, values);
      }
      return insertOrTakeOver(c, r, present(sql.boundedRecord, "bounded record"), values, sql.boundResultSets(),
          sql.boundTakesWait() ? wait : null,
          sql.recordTakeover, values);
    }

    /**
     * Inserts a row for the request's key ({@code insert}: the primary key, then {@code values}),
     * replacing an expired or orphaned row: with the upsert's condition on PostgreSQL and SQLite; on
     * MySQL, when the {@code INSERT IGNORE} inserted nothing, with {@code takeover} ({@code
     * takeoverValues}, then the primary key) if {@link KeyTableSql#expiredCheck} says the row may go.
     *
     * @return whether the row is now this request's
     */
    private boolean insertOrTakeOver(Connection c, IdempotentRequest r, String insert, Object[] values, int resultSetsBefore,
        @Nullable String firstParameter, @Nullable String takeover, Object[] takeoverValues) throws SQLException {
      boolean inserted;
      try {
        Object[] params = concat(key(r), values);
        inserted = SqlRunner.updateAfter(c, insert, resultSetsBefore,
            firstParameter == null ? params : concat(new Object[] {firstParameter}, params)) == 1;
      } catch (SQLException e) {
        // INSERT IGNORE reports a duplicate as 0 rows; a duplicate-key error here would come from a
        // server or proxy that does not honour IGNORE, and means the same.
        if (takeover == null || !sql.isDuplicateKey(e)) {
          throw e;
        }
        inserted = false;
      }
      if (inserted || takeover == null) {
        return inserted;
      }
      // MySQL: the key exists and its writer has committed; the ignored INSERT locked the row.
      // Read it under that lock and take it over only when it expired.
      try (PreparedStatement ps = SqlRunner.prepare(c, present(sql.expiredCheck, "expired check"), key(r)); ResultSet rs = ps.executeQuery()) {
        if (!rs.next() || !rs.getBoolean(1)) {
          return false;
        }
      }
      return SqlRunner.update(c, takeover, concat(takeoverValues, key(r))) == 1;
    }

    /**
     * @return {@code statement}, which exists on some databases only
     * @throws IllegalStateException if this database has none: a caller that did not check first
     */
    private static String present(@Nullable String statement, String what) {
      if (statement == null) {
        throw new IllegalStateException("this database has no " + what + " statement");
      }
      return statement;
    }

    private static Object[] key(IdempotentRequest r) {
      return new Object[] {r.scope().principal(), r.scope().operation(), r.key().value()};
    }

    private static Object[] concat(Object[] a, Object[] b) {
      Object[] all = new Object[a.length + b.length];
      System.arraycopy(a, 0, all, 0, a.length);
      System.arraycopy(b, 0, all, a.length, b.length);
      return all;
    }

    /** @return the key's live record, read without a lock, or {@code null} */
    @Nullable KeyRow lookup(Connection c, IdempotentRequest r) throws SQLException {
      return live(SqlRunner.readRow(c, sql.read, r.scope().principal(), r.scope().operation(), r.key().value()));
    }

    /** Inside the claim's transaction: sees the latest committed row even under REPEATABLE READ. */
    @Nullable KeyRow lookupLatest(Connection c, IdempotentRequest r) throws SQLException {
      return live(SqlRunner.readRow(c, sql.readLatest, r.scope().principal(), r.scope().operation(), r.key().value()));
    }

    private static @Nullable KeyRow live(@Nullable KeyRow row) {
      return row != null && row.live() ? row : null;
    }

    /**
     * {@link KeyTableSql#recordThenCommit}: the record and the commit, one round trip.
     *
     * @return {@code true} if the record was inserted and the transaction committed; {@code false}
     *     if the key has a live record (nothing inserted; the transaction is aborted, not committed)
     */
    boolean recordAndCommit(Connection c, IdempotentRequest r, StoredResponse response, Duration retention) throws SQLException {
      byte[] encoded = protection.seal(r.scope(), r.key(), r.fingerprint(), response);
      try {
        executeThenCommit(c, present(sql.recordThenCommit, "record then commit"), r.scope().principal(), r.scope().operation(), r.key().value(),
            r.fingerprint().hex(), protection.clearStatus(response), encoded, retention.toMillis());
        return true;
      } catch (SQLException e) {
        if (KeyTableSql.wroteNoRow(e)) {
          return false;
        }
        throw e;
      }
    }

    /** {@link KeyTableSql#completeThenCommit}: the completion and the commit, one round trip. */
    void completeAndCommit(Connection c, IdempotentRequest r, StoredResponse response, Duration retention) throws SQLException {
      long keep = retention.toMillis();
      try {
        executeThenCommit(c, present(sql.completeThenCommit, "complete then commit"), protection.clearStatus(response),
            protection.seal(r.scope(), r.key(), r.fingerprint(), response), keep, keep,
            r.scope().principal(), r.scope().operation(), r.key().value());
      } catch (SQLException e) {
        if (KeyTableSql.wroteNoRow(e)) {
          throw new SQLException("the claim of " + LogRef.of(r.scope(), r.key()) + " disappeared before completion",
              KeyTableSql.NO_ROW_STATE, e);
        }
        throw e;
      }
    }

    /** Runs a statement that ends with {@code COMMIT}, reading every result so that an error of the last one surfaces. */
    private static void executeThenCommit(Connection c, String statement, @Nullable Object... params) throws SQLException {
      try (PreparedStatement ps = SqlRunner.prepare(c, statement, params)) {
        boolean resultSet = ps.execute();
        while (resultSet || ps.getUpdateCount() != -1) {
          if (resultSet) {
            try (ResultSet rs = ps.getResultSet()) {
              while (rs.next()) {
                // the row count check's single row
              }
            }
          }
          resultSet = ps.getMoreResults();
        }
      }
    }

    boolean release(Connection c, IdempotentRequest r) throws SQLException {
      return SqlRunner.update(c, sql.delete, key(r)) > 0;
    }

    void complete(Connection c, IdempotentRequest r, StoredResponse response, Duration retention) throws SQLException {
      long keep = retention.toMillis();
      int changed = SqlRunner.update(c, sql.complete, protection.clearStatus(response),
          protection.seal(r.scope(), r.key(), r.fingerprint(), response), keep, keep,
          r.scope().principal(), r.scope().operation(), r.key().value());
      if (changed != 1) {
        throw new SQLException("the claim of " + LogRef.of(r.scope(), r.key()) + " disappeared before completion");
      }
    }
  }
}
