package dev.idem.jdbc.dialect;

import dev.idem.jdbc.SchemaCreation;
import dev.idem.jdbc.internal.SchemaCheck;
import dev.idem.jdbc.internal.SchemaLock;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * H2 2.x (2.2 or later; tested with 2.3), embedded or server, with its default MVStore engine, in
 * its native mode ({@code MODE=REGULAR}, the default). The compatibility modes ({@code
 * MODE=PostgreSQL}, {@code MODE=MySQL}, {@code MODE=MariaDB} and the others) are not supported:
 * they change how identifiers fold and how statements parse, and are not tested.
 *
 * <p>H2 has no upsert that reports "nothing inserted" for a duplicate, so a claim is a plain {@code
 * INSERT}: a concurrent duplicate waits on the key's row lock until the first transaction ends (at
 * most the session's {@code LOCK_TIMEOUT}: set it in the URL, {@code ;LOCK_TIMEOUT=10000}, longer
 * than an effect takes) and then fails with a duplicate key (23505), which Idem counts as "not
 * inserted": it reads the winner's row under {@code FOR UPDATE} and replays it, or takes an expired
 * row over with a conditional {@code UPDATE}, as on MySQL. An error does not abort H2's
 * transaction. Transactions are begun by turning auto-commit off; table DDL commits the open
 * transaction, so inside a caller's transaction the table must already exist.
 *
 * <p>The clock is {@code CURRENT_TIMESTAMP}, which H2 keeps fixed for the length of a transaction:
 * inside one of Idem's transactions the database's time is the transaction's start. A claim's lock
 * wait cannot be bounded for one statement ({@code SET LOCK_TIMEOUT} is the session's). The key
 * table is {@code h2.sql}. Stateless and thread-safe.
 */
public final class H2Dialect extends AbstractDialect {

  /** The one instance: {@link dev.idem.jdbc.Dialect#H2}. */
  public static final H2Dialect INSTANCE = new H2Dialect();

  /** H2's vendor codes: duplicate key, lock timeout, table already exists, index already exists. */
  private static final int DUPLICATE_KEY = 23505;
  private static final int LOCK_TIMEOUT = 50200;
  private static final int TABLE_EXISTS = 42101;
  private static final int INDEX_EXISTS = 42111;

  private H2Dialect() {
    super("H2", "h2.sql", "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000 AS BIGINT)");
  }

  @Override
  public boolean drivesConnectionClass(String connectionClass) {
    return connectionClass.startsWith("org.h2.");
  }

  @Override
  public boolean isProduct(String product) {
    return product.equals("h2");
  }

  /** Vendor code and SQLState 23505 ({@code DUPLICATE_KEY_1}). */
  @Override
  public boolean isDuplicateKey(SQLException e) {
    return e.getErrorCode() == DUPLICATE_KEY || (e.getErrorCode() == 0 && "23505".equals(e.getSQLState()));
  }

  /** 50200 ({@code LOCK_TIMEOUT_1}). */
  @Override
  boolean isLockWaitError(SQLException e) {
    return e.getErrorCode() == LOCK_TIMEOUT;
  }

  @Override
  public boolean ddlCommitsTransaction() {
    return true;
  }

  @Override
  public List<String> sessionLockWait(Duration wait) {
    return List.of("SET LOCK_TIMEOUT " + wait.toMillis());
  }

  @Override
  public KeyTableSql keyTableSql(String table) {
    return new Sql(table);
  }

  /** In the connection's current schema only, where its unqualified statements look. */
  @Override
  public boolean tableExists(Connection connection, String table) throws SQLException {
    DatabaseMetaData md = connection.getMetaData();
    String schema = connection.getSchema();
    String escape = md.getSearchStringEscape();
    for (String name : new String[] {table, table.toUpperCase(Locale.ROOT), table.toLowerCase(Locale.ROOT)}) {
      String pattern = escape == null ? name : name.replace("_", escape + "_");
      try (ResultSet rs = md.getTables(null, schema, pattern, new String[] {"TABLE"})) {
        if (rs.next()) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Each statement on its own (H2's DDL commits anyway). "Table already exists" (42101) and "index
   * already exists" (42111) count as done. Any other failure runs the statement again after a
   * pause, until {@link SchemaCreation#LOCK_WAIT} is spent: two sessions that create the same index
   * at the same moment can fail one of them with a general error ("object already exists", 50000)
   * or wait past the lock timeout, and the statement's {@code IF NOT EXISTS} then sees the object.
   * Inside a caller's transaction nothing is tried again.
   */
  @Override
  public void createTables(Connection c, String table, List<String> statements, boolean ifMissing) throws SQLException {
    long deadline = System.nanoTime() + SchemaCreation.LOCK_WAIT.toNanos();
    try (Statement st = c.createStatement()) {
      for (String statement : statements) {
        while (true) {
          try {
            st.execute(statement);
            break;
          } catch (SQLException e) {
            if (e.getErrorCode() == TABLE_EXISTS || e.getErrorCode() == INDEX_EXISTS) {
              break;
            }
            if (!c.getAutoCommit() || System.nanoTime() > deadline) {
              throw e;
            }
            SchemaLock.pause();
          }
        }
      }
    }
  }

  /**
   * {@code CHARACTER VARYING} at least as wide in characters as the shipped schema, {@code
   * CHARACTER LARGE OBJECT}, or their binary counterparts at least as wide in bytes; never {@code
   * CHARACTER} (padded with spaces) or {@code VARCHAR_IGNORECASE}, and no collation ({@code SET
   * COLLATION}) other than {@code OFF}.
   */
  @Override
  public List<String> keyTableProblems(Connection c, String table) throws SQLException {
    List<String> problems = new ArrayList<>();
    Map<String, String> seen = new LinkedHashMap<>();
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT LOWER(COLUMN_NAME), DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, COLLATION_NAME FROM INFORMATION_SCHEMA.COLUMNS"
            + " WHERE TABLE_SCHEMA = CURRENT_SCHEMA AND LOWER(TABLE_NAME) = LOWER(?)")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String column = rs.getString(1);
          int[] width = SchemaCheck.width(column);
          if (width == null) {
            continue;
          }
          String type = rs.getString(2).toUpperCase(Locale.ROOT);
          long length = rs.getLong(3);
          String collation = rs.getString(4);
          seen.put(column, type);
          if (collation != null && !collation.equalsIgnoreCase("OFF")) {
            problems.add(column + " uses the collation " + collation + ", under which different strings can compare equal");
          } else if (type.equals("CHARACTER VARYING") || type.equals("BINARY VARYING")) {
            int least = type.startsWith("BINARY") ? width[0] : width[1];
            if (length < least) {
              problems.add(column + " is " + type + "(" + length + "), narrower than " + least + ": longer values would be cut");
            }
          } else if (!type.equals("CHARACTER LARGE OBJECT") && !type.equals("BINARY LARGE OBJECT")) {
            problems.add(column + " is " + type + (type.equals("CHARACTER") ? ", which pads values with trailing spaces"
                : type.equals("VARCHAR_IGNORECASE") ? ", which ignores case" : ", not CHARACTER VARYING"));
          }
        }
      }
    }
    SchemaCheck.missing(seen, problems);
    return problems;
  }

  @Override
  public String keyTableMigration(String table) {
    return "ALTER TABLE " + table + " ALTER COLUMN principal SET DATA TYPE VARCHAR(200); ALTER TABLE " + table
        + " ALTER COLUMN operation SET DATA TYPE VARCHAR(200); ALTER TABLE " + table
        + " ALTER COLUMN idem_key SET DATA TYPE VARCHAR(255); ALTER TABLE " + table
        + " ALTER COLUMN owner_token SET DATA TYPE VARCHAR(64)";
  }

  @Override
  public String stepTableDdl(String table) {
    return "CREATE TABLE IF NOT EXISTS " + table + " (principal VARCHAR(200) NOT NULL, operation VARCHAR(200) NOT NULL,"
        + " idem_key VARCHAR(255) NOT NULL, step VARCHAR(64) NOT NULL, result VARCHAR NOT NULL, created_at BIGINT NOT NULL,"
        + " PRIMARY KEY (principal, operation, idem_key, step))";
  }

  @Override
  public String lockSkippingLocked(Connection connection) {
    return " FOR UPDATE SKIP LOCKED";
  }

  /**
   * H2's key table statements: a plain {@code INSERT} whose duplicate key error means "the key has
   * a row", then, as on MySQL, a read of that row under {@code FOR UPDATE} and a conditional
   * takeover.
   */
  private static final class Sql extends KeyTableSql {
    Sql(String table) {
      super(INSTANCE, table);
    }

    @Override
    protected @Nullable String replaceOnConflict() {
      return null;
    }

    @Override
    protected String insertIgnoringDuplicates() {
      return "INSERT INTO ";
    }

    @Override
    protected String sharedLock() {
      return " FOR UPDATE";
    }
  }
}
