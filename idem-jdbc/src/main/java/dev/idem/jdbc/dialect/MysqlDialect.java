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
 * MySQL 8 and MariaDB 10.5 or later, InnoDB, via MariaDB Connector/J or MySQL Connector/J: an
 * {@code INSERT IGNORE} on the primary key. InnoDB makes a concurrent duplicate wait on the key's
 * lock until the first transaction ends; it then inserts no row (a note, not an error: MariaDB
 * Connector/J logs every server error at WARN, and a duplicate-key error's text holds the principal
 * and the key), and Idem reads the winner's row with a locking read ({@code LOCK IN SHARE MODE})
 * and replays it. An expired row is taken over with a conditional {@code UPDATE}. Table DDL commits
 * implicitly, so inside a caller's transaction the table must already exist. Transactions are begun
 * with {@code START TRANSACTION}, leaving the session's auto-commit alone (the drivers send {@code
 * SET autocommit} on every {@code setAutoCommit}). On a MariaDB server a claim's lock wait can be
 * bounded ({@code SET STATEMENT innodb_lock_wait_timeout = 0 FOR}); MySQL has no equivalent for
 * one statement. The clock is {@code UTC_TIMESTAMP(3)} counted from the epoch, pure arithmetic on a
 * UTC datetime, whatever the session's time zone. The key table is {@code mysql.sql}. Stateless and
 * thread-safe.
 */
public final class MysqlDialect extends AbstractDialect {

  /** The one instance: {@link dev.idem.jdbc.Dialect#MYSQL}. */
  public static final MysqlDialect INSTANCE = new MysqlDialect();

  private MysqlDialect() {
    super("MYSQL", "mysql.sql", "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)");
  }

  @Override
  public boolean drivesConnectionClass(String connectionClass) {
    return connectionClass.startsWith("org.mariadb.jdbc.") || connectionClass.startsWith("com.mysql.");
  }

  @Override
  public boolean isProduct(String product) {
    return product.contains("mysql") || product.contains("mariadb");
  }

  /**
   * {@code ER_DUP_ENTRY} (1062), {@code ER_DUP_ENTRY_WITH_KEY_NAME} (1586) or {@code ER_DUP_KEY}
   * (1022). Their SQLState, 23000, is shared with every other integrity violation (a NULL into NOT
   * NULL is 1048, a foreign key 1452).
   */
  @Override
  public boolean isDuplicateKey(SQLException e) {
    int code = e.getErrorCode();
    return code == 1062 || code == 1586 || code == 1022;
  }

  /** 1205, lock wait timeout exceeded. */
  @Override
  boolean isLockWaitError(SQLException e) {
    return e.getErrorCode() == 1205;
  }

  /** {@inheritDoc} As the driver reports it (MariaDB Connector/J, MySQL Connector/J), without a round trip. */
  @Override
  public boolean inTransactionBegunBySql(java.sql.Connection connection) {
    return DriverTransactionState.mariadb(connection) || DriverTransactionState.mysqlConnectorJ(connection);
  }

  @Override
  public boolean ddlCommitsTransaction() {
    return true;
  }

  @Override
  public boolean mayBeGaleraNode() {
    return true; // Galera is a MySQL/MariaDB cluster
  }

  @Override
  public boolean schemaIsDatabase() {
    return true;
  }

  /** On MariaDB only. */
  @Override
  public boolean boundsClaimWait(Connection connection) throws SQLException {
    return product(connection).contains("mariadb");
  }

  @Override
  public String lockWaitQuery() {
    return "SELECT @@innodb_lock_wait_timeout";
  }

  @Override
  public List<String> sessionLockWait(Duration wait) {
    return List.of("SET SESSION innodb_lock_wait_timeout = " + Math.max(1, wait.toSeconds()));
  }

  @Override
  public String identityColumn(String column) {
    return column + " BIGINT AUTO_INCREMENT PRIMARY KEY";
  }

  @Override
  public KeyTableSql keyTableSql(String table) {
    return new Sql(table);
  }

  /** On a MariaDB server, the statements with a claim bounded by {@code SET STATEMENT ... FOR}. */
  @Override
  public KeyTableSql keyTableSql(String table, Connection connection) throws SQLException {
    return boundsClaimWait(connection) ? mariadbKeyTableSql(table) : new Sql(table);
  }

  /**
   * The statements {@link #keyTableSql(String, Connection)} gives on a MariaDB server, for code that
   * knows the server without a JDBC connection (idem-r2dbc, from its driver's name): a claim bounded
   * by {@code SET STATEMENT ... FOR}, and a purge whose batches each start where the last one ended
   * ({@link KeyTableSql#purgeFrom}, {@code DELETE ... RETURNING}, which MySQL does not have).
   *
   * @param table the key table's name, as {@link #keyTableSql(String)} takes it
   * @return MariaDB's statements for {@code table}, never {@code null}
   */
  public KeyTableSql mariadbKeyTableSql(String table) {
    return new MariadbSql(table);
  }

  @Override
  public String beginStatement() {
    return "START TRANSACTION";
  }

  @Override
  @org.jspecify.annotations.Nullable String catalog(Connection connection) throws SQLException {
    return connection.getCatalog();
  }

  /**
   * A named lock ({@code GET_LOCK}) on the database and table name around the statements, released
   * afterwards; where the server refuses named locks (some Galera set-ups), or the lock is not
   * granted within {@link SchemaCreation#SchemaCreation.LOCK_WAIT}, the statements run without it. "Table already
   * exists" (1050) and "duplicate key name" (1061) count as done. With {@code ifMissing}, a table
   * that exists once the lock is held was made whole by another creator, and nothing runs: on Galera
   * every DDL, {@code IF NOT EXISTS} included, aborts the open transactions on the table.
   */
  @Override
  public void createTables(Connection c, String table, List<String> statements, boolean ifMissing) throws SQLException {
    String lock = namedLock(c, table);
    boolean locked = false;
    try {
      try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, ?)")) {
        ps.setString(1, lock);
        ps.setLong(2, SchemaCreation.LOCK_WAIT.toSeconds());
        try (ResultSet rs = ps.executeQuery()) {
          locked = rs.next() && rs.getInt(1) == 1;
        }
      } catch (SQLException e) {
        // Named locks refused (some Galera set-ups): the tolerated errors below are the guard.
        locked = false;
      }
      if (ifMissing && locked && mysqlTableExists(c, table)) {
        return; // made whole by another creator while this one waited (see runIfMissing)
      }
      try (Statement st = c.createStatement()) {
        for (String statement : statements) {
          try {
            st.execute(statement);
          } catch (SQLException e) {
            if (e.getErrorCode() != 1050 && e.getErrorCode() != 1061) {
              throw e;
            }
          }
        }
      }
    } finally {
      if (locked) {
        try (PreparedStatement ps = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
          ps.setString(1, lock);
          ps.execute();
        } catch (SQLException e) {
          // released anyway when the session ends
        }
      }
    }
  }

  /** @return whether the table exists in the connection's database */
  private static boolean mysqlTableExists(Connection c, String table) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** @return the lock's name: server-wide, so it names the database; at most 64 characters */
  private static String namedLock(Connection c, String table) throws SQLException {
    String database = c.getCatalog();
    String name = "idem.schema." + (database == null ? "" : database) + "." + table.toLowerCase(Locale.ROOT);
    return name.length() <= 64 ? name : "idem.schema." + Long.toHexString(SchemaLock.key(name));
  }

  /**
   * {@code VARBINARY} (or {@code BLOB}) at least as wide as the shipped schema, or a character
   * column with a NO PAD binary collation ({@code utf8mb4_nopad_bin}, {@code utf8mb4_0900_bin}) at
   * least as wide in characters. Widths matter because a value cut to a narrower column would
   * collide with another.
   */
  @Override
  public List<String> keyTableProblems(Connection c, String table) throws SQLException {
    List<String> problems = new ArrayList<>();
    Map<String, String> seen = new LinkedHashMap<>();
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT LOWER(COLUMN_NAME), LOWER(DATA_TYPE), CHARACTER_MAXIMUM_LENGTH, LOWER(COLLATION_NAME)"
            + " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String column = rs.getString(1);
          int[] width = SchemaCheck.width(column);
          if (width == null) {
            continue;
          }
          String type = rs.getString(2);
          long length = rs.getLong(3);
          String collation = rs.getString(4);
          seen.put(column, type);
          boolean binary = type.equals("varbinary") || type.endsWith("blob");
          boolean noPadBinary = collation != null && collation.endsWith("_bin")
              && (collation.contains("nopad") || collation.contains("_0900_"));
          if (binary) {
            if (type.equals("varbinary") && length < width[0]) {
              problems.add(column + " is VARBINARY(" + length + "), narrower than " + width[0] + " bytes: longer values would be cut");
            }
          } else if (noPadBinary && (type.equals("varchar") || type.endsWith("text"))) {
            if (type.equals("varchar") && length < width[1]) {
              problems.add(column + " is VARCHAR(" + length + "), narrower than " + width[1] + " characters: longer values would be cut");
            }
          } else {
            problems.add(column + " is " + type + (collation == null ? "" : " with collation " + collation)
                + ", under which values that differ only in trailing spaces"
                + (collation != null && !collation.endsWith("_bin") ? ", in case or in accents" : "") + " compare equal");
          }
        }
      }
    }
    SchemaCheck.missing(seen, problems);
    return problems;
  }

  @Override
  public String keyTableMigration(String table) {
    return "ALTER TABLE " + table + " MODIFY principal VARBINARY(600) NOT NULL, MODIFY operation VARBINARY(600) NOT NULL,"
        + " MODIFY idem_key VARBINARY(255) NOT NULL, MODIFY owner_token VARBINARY(256) NULL";
  }

  @Override
  public String stepTableDdl(String table) {
    return "CREATE TABLE IF NOT EXISTS " + table + " (principal VARBINARY(600) NOT NULL, operation VARBINARY(600) NOT NULL,"
        + " idem_key VARBINARY(255) NOT NULL, step VARBINARY(64) NOT NULL, result LONGTEXT NOT NULL, created_at BIGINT NOT NULL,"
        + " PRIMARY KEY (principal, operation, idem_key, step)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
  }

  /** {@code SKIP LOCKED} from MySQL 8 and MariaDB 10.6; a plain {@code FOR UPDATE} before. */
  @Override
  public String lockSkippingLocked(Connection c) throws SQLException {
    DatabaseMetaData meta = c.getMetaData();
    boolean mariadb = meta.getDatabaseProductVersion().toLowerCase(Locale.ROOT).contains("mariadb")
        || meta.getDatabaseProductName().toLowerCase(Locale.ROOT).contains("mariadb");
    int major = meta.getDatabaseMajorVersion();
    int minor = meta.getDatabaseMinorVersion();
    boolean skipLocked = mariadb ? major > 10 || major == 10 && minor >= 6 : major >= 8;
    return skipLocked ? " FOR UPDATE SKIP LOCKED" : " FOR UPDATE";
  }

  /** MySQL's key table statements: {@code INSERT IGNORE}, a takeover by {@code UPDATE}, locking reads. */
  private static class Sql extends KeyTableSql {
    Sql(String table) {
      super(INSTANCE, table);
    }

    @Override
    protected @Nullable String replaceOnConflict() {
      return null;
    }

    @Override
    protected String insertIgnoringDuplicates() {
      // IGNORE: a duplicate key (an expected race, or a key to take over) is 0 rows and a note
      // rather than an error: MariaDB Connector/J logs every error the server sends at WARN, with
      // the duplicate entry (principal and key) in the text. IGNORE would also cut a too-long value
      // rather than fail, which SchemaCheck rules out by refusing columns narrower than the longest
      // scope part, key and owner token.
      return "INSERT IGNORE INTO ";
    }

    @Override
    protected String sharedLock() {
      return " LOCK IN SHARE MODE";
    }

    @Override
    protected String purge() {
      return "DELETE FROM " + table + " WHERE expires_at <= " + now + " ORDER BY expires_at LIMIT ?";
    }
  }

  /**
   * MariaDB 10.5 or later: MySQL's statements, a bounded claim (0: no wait at all), and a purge
   * whose batches each start where the last one ended ({@link KeyTableSql#purgeFrom}).
   */
  private static final class MariadbSql extends Sql {
    MariadbSql(String table) {
      super(table);
    }

    @Override
    protected String purgeFrom() {
      // UTC_TIMESTAMP(3) is fixed for the statement, so both ends bound the range scan of the
      // expires_at index; RETURNING (MariaDB, not MySQL) gives each deleted row's expiry
      return "DELETE FROM " + table + " WHERE expires_at >= ? AND expires_at <= " + now
          + " ORDER BY expires_at LIMIT ? RETURNING 1, expires_at";
    }

    @Override
    protected String boundBefore() {
      return "SET STATEMENT innodb_lock_wait_timeout = 0 FOR ";
    }
  }
}
