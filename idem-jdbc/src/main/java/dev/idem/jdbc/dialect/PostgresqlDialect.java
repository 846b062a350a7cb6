package dev.idem.jdbc.dialect;

import dev.idem.jdbc.SchemaCreation;
import dev.idem.jdbc.internal.SchemaCheck;
import dev.idem.jdbc.internal.SchemaLock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * PostgreSQL 11 or later, via pgjdbc: {@code INSERT ... ON CONFLICT} on the primary key
 * (principal, operation, key). A concurrent duplicate blocks on the unique index until the first
 * transaction ends, then sees its committed row and replays it (or, if it rolled back, claims the
 * key itself). Run at READ COMMITTED, PostgreSQL's default. An SQL error aborts the transaction, so
 * a savepoint is set before the effect, in the claim's round trip; several statements travel in
 * one round trip (a lookup with the claim, a completion with the {@code COMMIT}); a claim's lock
 * wait is bounded with {@code lock_timeout} for that statement alone. The key table is {@code
 * postgresql.sql}. Stateless and thread-safe.
 */
public final class PostgresqlDialect extends AbstractDialect {

  /** The one instance: {@link dev.idem.jdbc.Dialect#POSTGRESQL}. */
  public static final PostgresqlDialect INSTANCE = new PostgresqlDialect();

  /** How many times the creating transaction runs when a creator without the lock raced it. */
  private static final int ATTEMPTS = 3;

  private PostgresqlDialect() {
    super("POSTGRESQL", "postgresql.sql", "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)");
  }

  @Override
  public boolean drivesConnectionClass(String connectionClass) {
    return connectionClass.startsWith("org.postgresql.");
  }

  @Override
  public boolean isProduct(String product) {
    return product.contains("postgresql");
  }

  /** SQLState {@code 23505} ({@code unique_violation}). */
  @Override
  public boolean isDuplicateKey(SQLException e) {
    return "23505".equals(e.getSQLState());
  }

  /** SQLState 55P03 ({@code lock_not_available}). */
  @Override
  boolean isLockWaitError(SQLException e) {
    return "55P03".equals(e.getSQLState());
  }

  /** {@inheritDoc} As pgjdbc reports it, without a round trip. */
  @Override
  public boolean inTransactionBegunBySql(java.sql.Connection connection) {
    return DriverTransactionState.postgresql(connection);
  }

  @Override
  public boolean abortsTransactionOnError() {
    return true;
  }

  @Override
  public boolean supportsReturning() {
    return true;
  }

  @Override
  public boolean boundsClaimWait(Connection connection) {
    return true;
  }

  @Override
  public String lockWaitQuery() {
    return "SHOW lock_timeout";
  }

  @Override
  public List<String> sessionLockWait(Duration wait) {
    return List.of("SET lock_timeout = " + wait.toMillis());
  }

  @Override
  public KeyTableSql keyTableSql(String table) {
    return new Sql(table);
  }

  /**
   * The unquoted name, folded and looked up along the search_path as the statements do; a plain or
   * partitioned table only. {@code to_regclass} answers NULL, never an error, when absent.
   */
  @Override
  public boolean tableExists(Connection connection, String table) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(
        "SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass(?) AND relkind IN ('r', 'p')")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getInt(1) > 0;
      }
    }
  }

  /**
   * The statements in one transaction that first takes a transaction-scoped advisory lock on the
   * table's name ({@code pg_try_advisory_xact_lock}, tried again for up to {@link
   * SchemaCreation#SchemaCreation.LOCK_WAIT}); a duplicate-object error (23505, 42P07, 42710) from a creator that
   * does not take the lock rolls the transaction back, and it runs again. In a caller's transaction
   * the lock is held until it ends.
   */
  @Override
  public void createTables(Connection c, String table, List<String> statements, boolean ifMissing) throws SQLException {
    if (!c.getAutoCommit()) {
      // The caller's transaction: the lock is held until it ends, the caller decides the outcome.
      advisoryLock(c, table);
      SchemaLock.execute(c, statements);
      return;
    }
    for (int attempt = 1; ; attempt++) {
      c.setAutoCommit(false);
      try {
        advisoryLock(c, table);
        SchemaLock.execute(c, statements);
        c.commit();
        return;
      } catch (SQLException | RuntimeException e) {
        // Rolled back before auto-commit is restored: restoring it would commit what ran.
        SchemaLock.rollbackQuietly(c, e);
        if (attempt >= ATTEMPTS || !(e instanceof SQLException sql && postgresDuplicate(sql))) {
          throw e;
        }
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  /**
   * Takes the table's transaction-scoped advisory lock, trying again until {@link #SchemaCreation.LOCK_WAIT} is
   * spent: a creator never waits without bound on another (a start-up hung on a stuck transaction).
   */
  private static void advisoryLock(Connection c, String table) throws SQLException {
    long deadline = System.nanoTime() + SchemaCreation.LOCK_WAIT.toNanos();
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_xact_lock(?)")) {
      ps.setLong(1, SchemaLock.key(table));
      while (true) {
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next() && rs.getBoolean(1)) {
            return;
          }
        }
        if (System.nanoTime() > deadline) {
          throw new SQLException("another session held the schema lock of table " + table + " for longer than "
              + SchemaCreation.LOCK_WAIT.toSeconds() + " s (pg_advisory_xact_lock " + SchemaLock.key(table) + ")", "55P03");
        }
        SchemaLock.pause();
      }
    }
  }

  private static boolean postgresDuplicate(SQLException e) {
    String state = e.getSQLState();
    return "23505".equals(state) || "42P07".equals(state) || "42710".equals(state);
  }

  /**
   * {@code varchar} or {@code text} (not {@code char(n)}, which ignores trailing spaces) with a
   * deterministic collation (every collation but those created {@code deterministic = false}).
   */
  @Override
  public List<String> keyTableProblems(Connection c, String table) throws SQLException {
    List<String> problems = new ArrayList<>();
    Map<String, String> seen = new LinkedHashMap<>();
    boolean hasDeterministicFlag = c.getMetaData().getDatabaseMajorVersion() >= 12;
    String sql = "SELECT a.attname, t.typname, co.collname, "
        + (hasDeterministicFlag ? "COALESCE(co.collisdeterministic, TRUE)" : "TRUE")
        + " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
        + " LEFT JOIN pg_collation co ON co.oid = a.attcollation"
        + " WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String column = rs.getString(1).toLowerCase(Locale.ROOT);
          if (SchemaCheck.width(column) == null) {
            continue;
          }
          String type = rs.getString(2);
          seen.put(column, type);
          if (type.equals("bpchar")) {
            problems.add(column + " is CHAR(n), which ignores trailing spaces");
          } else if (!type.equals("varchar") && !type.equals("text")) {
            problems.add(column + " is " + type + ", not varchar or text");
          } else if (!rs.getBoolean(4)) {
            problems.add(column + " uses the nondeterministic collation " + rs.getString(3)
                + ", under which different strings can compare equal");
          }
        }
      }
    }
    SchemaCheck.missing(seen, problems);
    return problems;
  }

  @Override
  public String keyTableMigration(String table) {
    return "ALTER TABLE " + table + " ALTER COLUMN principal TYPE VARCHAR(200) COLLATE \"C\","
        + " ALTER COLUMN operation TYPE VARCHAR(200) COLLATE \"C\", ALTER COLUMN idem_key TYPE VARCHAR(255) COLLATE \"C\","
        + " ALTER COLUMN owner_token TYPE VARCHAR(64) COLLATE \"C\"";
  }

  @Override
  public String stepTableDdl(String table) {
    return "CREATE TABLE IF NOT EXISTS " + table + " (principal VARCHAR(200) COLLATE \"C\" NOT NULL,"
        + " operation VARCHAR(200) COLLATE \"C\" NOT NULL, idem_key VARCHAR(255) COLLATE \"C\" NOT NULL,"
        + " step VARCHAR(64) COLLATE \"C\" NOT NULL, result TEXT NOT NULL, created_at BIGINT NOT NULL,"
        + " PRIMARY KEY (principal, operation, idem_key, step))";
  }

  @Override
  public String lockSkippingLocked(Connection connection) {
    return " FOR UPDATE SKIP LOCKED";
  }

  /** PostgreSQL's key table statements: several per round trip, and a claim bounded by {@code lock_timeout}. */
  private static final class Sql extends KeyTableSql {
    Sql(String table) {
      super(INSTANCE, table);
    }

    @Override
    protected boolean savepointAfterClaim() {
      return true;
    }

    @Override
    protected String purgeFrom() {
      return "WITH gone AS (DELETE FROM " + table + " WHERE (principal, operation, idem_key) IN"
          + " (SELECT principal, operation, idem_key FROM " + table
          // (SELECT now): computed once, so both ends bound the index scan; clock_timestamp() alone
          // is volatile, no index bound, and the last batch would walk every live key's entry
          + " WHERE expires_at >= ? AND expires_at <= (SELECT " + now + ") ORDER BY expires_at LIMIT ?)"
          + " AND expires_at <= " + now + " RETURNING expires_at) SELECT COUNT(*), MAX(expires_at) FROM gone";
    }

    /**
     * Saves the session's lock_timeout in a setting of Idem's own and sets the bound, both for the
     * transaction only (set_config's third argument), so that nothing outlives a rollback. One
     * statement: a CASE evaluates its condition (the save) before its result (the bound), so the
     * saved value is never the bound itself; set_config answers the new value, never NULL.
     */
    @Override
    protected String boundBefore() {
      return "SELECT CASE WHEN set_config('idem.saved_lock_timeout', current_setting('lock_timeout'), true) IS NOT NULL"
          + " THEN set_config('lock_timeout', ?, true) END; ";
    }

    @Override
    protected String boundAfter() {
      return "; SELECT set_config('lock_timeout', current_setting('idem.saved_lock_timeout'), true)";
    }

    @Override
    public int boundResultSets() {
      return 1;
    }

    @Override
    public boolean boundTakesWait() {
      return true;
    }
  }
}
