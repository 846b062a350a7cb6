package dev.idem.jdbc.dialect;

import dev.idem.jdbc.SchemaCreation;
import dev.idem.jdbc.internal.SchemaCheck;
import dev.idem.jdbc.internal.SchemaLock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * SQLite 3.35 or later (upsert; {@code unixepoch('subsec')} needs 3.42), via sqlite-jdbc: one
 * writer at a time. Idem opens its own transactions with {@code BEGIN IMMEDIATE}, so the write lock
 * is taken before the claim is read, and a duplicate waits on the connection's {@code
 * busy_timeout}, which Idem raises to its own least wait. Use WAL ({@code journal_mode=WAL}) so
 * readers do not block the writer. The key table is {@code sqlite.sql}. Stateless and thread-safe
 * (the record of the connections whose busy timeout was raised is synchronized).
 */
public final class SqliteDialect extends AbstractDialect {

  /** The one instance: {@link dev.idem.jdbc.Dialect#SQLITE}. */
  public static final SqliteDialect INSTANCE = new SqliteDialect();

  /**
   * The SQLite connections whose {@code busy_timeout} was raised to at least the value mapped, so
   * it is read once per connection rather than once per transaction. Keyed by the driver's own
   * connection (a pool hands out a new proxy per borrow); weak, so closed connections go.
   */
  private static final Map<Connection, Long> BUSY_TIMEOUT_CHECKED = Collections.synchronizedMap(new WeakHashMap<>());

  private SqliteDialect() {
    super("SQLITE", "sqlite.sql", "CAST(unixepoch('subsec') * 1000 AS INTEGER)");
  }

  @Override
  public boolean drivesConnectionClass(String connectionClass) {
    return connectionClass.startsWith("org.sqlite.");
  }

  @Override
  public boolean isProduct(String product) {
    return product.contains("sqlite");
  }

  /**
   * {@code SQLITE_CONSTRAINT_PRIMARYKEY} (1555) or {@code SQLITE_CONSTRAINT_UNIQUE} (2067).
   * sqlite-jdbc reports the primary code, 19, for every constraint (a NOT NULL too) unless extended
   * result codes are on; the extended code is then the name that starts its message (SQLite's
   * messages are never translated).
   */
  @Override
  public boolean isDuplicateKey(SQLException e) {
    int code = e.getErrorCode();
    String message = String.valueOf(e.getMessage());
    return code == 1555 || code == 2067
        || message.startsWith("[SQLITE_CONSTRAINT_PRIMARYKEY]") || message.startsWith("[SQLITE_CONSTRAINT_UNIQUE]");
  }

  /** SQLite has no lock wait bound but the busy timeout, whose end is not told apart: never. */
  @Override
  boolean isLockWaitError(SQLException e) {
    return false;
  }

  @Override
  public boolean readsReplaysOutsideTransactions() {
    return true;
  }

  @Override
  public boolean serializesWriters() {
    return true;
  }

  @Override
  public boolean supportsSelectForUpdate() {
    return false;
  }

  @Override
  public boolean supportsRepeatableRead() {
    return false;
  }

  @Override
  public boolean supportsReturning() {
    return true;
  }

  @Override
  public boolean hasSchemas() {
    return false;
  }

  @Override
  public List<String> sessionLockWait(Duration wait) {
    return List.of("PRAGMA busy_timeout = " + wait.toMillis());
  }

  @Override
  public String identityColumn(String column) {
    return column + " INTEGER PRIMARY KEY AUTOINCREMENT";
  }

  @Override
  public KeyTableSql keyTableSql(String table) {
    return new Sql(table);
  }

  @Override
  public String beginStatement() {
    return "BEGIN IMMEDIATE";
  }

  /**
   * Raises the connection's {@code busy_timeout} to at least {@code least}, reading it the first
   * time a (physical) connection comes here only: afterwards this costs no statement. A later
   * {@code PRAGMA busy_timeout} that lowers it again is the caller's choice.
   */
  @Override
  public void raiseWriteLockWait(Connection connection, Duration least) throws SQLException {
    Connection physical = physical(connection);
    Long checked = BUSY_TIMEOUT_CHECKED.get(physical);
    if (checked != null && checked >= least.toMillis()) {
      return;
    }
    try (Statement st = connection.createStatement()) {
      try (ResultSet rs = st.executeQuery("PRAGMA busy_timeout")) {
        if (rs.next() && rs.getLong(1) < least.toMillis()) {
          st.execute("PRAGMA busy_timeout = " + least.toMillis());
        }
      }
    }
    BUSY_TIMEOUT_CHECKED.put(physical, least.toMillis());
  }

  /** @return the driver's connection under a pool's or framework's proxy, or {@code c} itself */
  private static Connection physical(Connection c) {
    try {
      if (c.isWrapperFor(Connection.class)) {
        Connection inner = c.unwrap(Connection.class);
        if (inner != null) {
          return inner;
        }
      }
    } catch (SQLException e) {
      // not unwrappable: the proxy itself is the key, checked once per borrow at worst
    }
    return c;
  }

  /**
   * Each statement on its own, waiting for the write lock at least {@link SchemaCreation#SchemaCreation.LOCK_WAIT}
   * (the busy timeout is raised for the call when shorter, then restored); "already exists" counts
   * as done, and a statement refused as busy runs again until the wait is spent.
   */
  @Override
  public void createTables(Connection c, String table, List<String> statements, boolean ifMissing) throws SQLException {
    int previous = -1;
    if (c.getAutoCommit()) {
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("PRAGMA busy_timeout")) {
        int timeout = rs.next() ? rs.getInt(1) : 0;
        if (timeout < SchemaCreation.LOCK_WAIT.toMillis()) {
          previous = timeout;
          st.execute("PRAGMA busy_timeout = " + SchemaCreation.LOCK_WAIT.toMillis());
        }
      }
    }
    try (Statement st = c.createStatement()) {
      long deadline = System.nanoTime() + SchemaCreation.LOCK_WAIT.toNanos();
      for (String statement : statements) {
        while (true) {
          try {
            st.execute(statement);
            break;
          } catch (SQLException e) {
            String message = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
            if (message.contains("already exists")) {
              break;
            }
            boolean busy = message.contains("sqlite_busy") || message.contains("database is locked")
                || e.getErrorCode() == 5 || e.getErrorCode() == 6;
            if (!busy || !c.getAutoCommit() || System.nanoTime() > deadline) {
              throw e;
            }
            SchemaLock.pause();
          }
        }
      }
    } finally {
      if (previous >= 0) {
        try (Statement st = c.createStatement()) {
          st.execute("PRAGMA busy_timeout = " + previous);
        }
      }
    }
  }


  private static final Pattern COLLATE = Pattern.compile("(?i)\\bCOLLATE\\s+\"?([A-Za-z_0-9]+)\"?");

  /**
   * A TEXT or BLOB affinity (an INTEGER or NUMERIC affinity would turn {@code "007"} into {@code 7})
   * and no {@code COLLATE} other than {@code BINARY}.
   */
  @Override
  public List<String> keyTableProblems(Connection c, String table) throws SQLException {
    List<String> problems = new ArrayList<>();
    Map<String, String> seen = new LinkedHashMap<>();
    String ddl = null;
    try (PreparedStatement ps = c.prepareStatement("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          ddl = rs.getString(1);
        }
      }
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT name, type FROM pragma_table_info(?)")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String column = rs.getString(1).toLowerCase(Locale.ROOT);
          if (SchemaCheck.width(column) == null) {
            continue;
          }
          String type = rs.getString(2) == null ? "" : rs.getString(2).toUpperCase(Locale.ROOT);
          seen.put(column, type);
          // SQLite's affinity rules (https://www.sqlite.org/datatype3.html, section 3.1), in order.
          boolean textOrBlob = !type.contains("INT")
              && (type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") || type.contains("BLOB") || type.isEmpty());
          if (!textOrBlob) {
            problems.add(column + " is declared " + type + ", whose affinity converts numeric-looking text (\"007\" becomes 7)");
          }
          String collation = ddl == null ? null : columnCollation(ddl, column);
          if (collation != null && !collation.equalsIgnoreCase("BINARY")) {
            problems.add(column + " uses COLLATE " + collation + ", which compares different strings as equal");
          }
        }
      }
    }
    SchemaCheck.missing(seen, problems);
    return problems;
  }

  /** @return the COLLATE name in the column's definition in {@code ddl}, or {@code null} */
  private static @Nullable String columnCollation(String ddl, String column) {
    Matcher def = Pattern.compile("(?i)[(,]\\s*[\"`\\[]?" + column + "[\"`\\]]?\\s+([^,]*)").matcher(ddl);
    if (!def.find()) {
      return null;
    }
    Matcher collate = COLLATE.matcher(def.group(1));
    return collate.find() ? collate.group(1) : null;
  }

  @Override
  public String keyTableMigration(String table) {
    return "create a new table with the shipped sqlite.sql (named " + table + "_new), then INSERT INTO " + table
        + "_new SELECT * FROM " + table + "; DROP TABLE " + table + "; ALTER TABLE " + table + "_new RENAME TO " + table
        + "; and recreate the index on expires_at";
  }

  @Override
  public String stepTableDdl(String table) {
    return "CREATE TABLE IF NOT EXISTS " + table + " (principal TEXT NOT NULL, operation TEXT NOT NULL, idem_key TEXT NOT NULL,"
        + " step TEXT NOT NULL, result TEXT NOT NULL, created_at INTEGER NOT NULL,"
        + " PRIMARY KEY (principal, operation, idem_key, step)) WITHOUT ROWID";
  }

  /** Nothing: writers are serialized by the database's write lock, taken at {@code BEGIN IMMEDIATE}. */
  @Override
  public String lockSkippingLocked(Connection connection) {
    return "";
  }

  /** SQLite's key table statements: upserts, a single writer, nothing bounded. */
  private static final class Sql extends KeyTableSql {
    Sql(String table) {
      super(INSTANCE, table);
    }
  }
}
