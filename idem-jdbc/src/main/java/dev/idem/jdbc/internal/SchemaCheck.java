package dev.idem.jdbc.internal;

import dev.idem.core.IdemStoreException;
import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Verifies that an existing key table compares the columns that identify a record byte for byte:
 * {@code principal}, {@code operation}, {@code idem_key}, and {@code owner_token} (the fencing of
 * lease mode). A table created by an earlier version on MySQL or MariaDB used character columns
 * with PAD SPACE collations, under which {@code "k1 "} equals {@code "k1"}: one principal could be
 * replayed another's stored response. Such a table is refused with the column, the reason and the
 * statement that migrates it, rather than used.
 *
 * <p>What passes, per dialect:
 *
 * <ul>
 *   <li>MySQL/MariaDB: {@code VARBINARY} (or {@code BLOB}) at least as wide as the shipped schema,
 *       or a character column with a NO PAD binary collation ({@code utf8mb4_nopad_bin}, {@code
 *       utf8mb4_0900_bin}) at least as wide in characters. Widths matter because a value cut to a
 *       narrower column would collide with another.
 *   <li>PostgreSQL: {@code varchar} or {@code text} (not {@code char(n)}, which ignores trailing
 *       spaces) with a deterministic collation (every collation but those created {@code
 *       deterministic = false}).
 *   <li>SQLite: a TEXT or BLOB affinity (an INTEGER or NUMERIC affinity would turn {@code "007"}
 *       into {@code 7}) and no {@code COLLATE} other than {@code BINARY}.
 * </ul>
 *
 * <p>Stateless and thread-safe. Not public API.
 */
public final class SchemaCheck {

  /** The columns checked, with their width in the shipped MySQL schema: bytes, then characters. */
  private static final Map<String, int[]> COLUMNS = new LinkedHashMap<>();

  static {
    COLUMNS.put("principal", new int[] {600, 200});
    COLUMNS.put("operation", new int[] {600, 200});
    COLUMNS.put("idem_key", new int[] {255, 255});
    COLUMNS.put("owner_token", new int[] {256, 64});
  }

  private SchemaCheck() {}

  /**
   * @param connection an open connection on which the table exists
   * @param dialect the connection's dialect
   * @param table the key table, a validated plain identifier
   * @throws IdemStoreException if a column compares loosely, naming it and the migration statement,
   *     or if the catalog cannot be read
   */
  public static void verify(Connection connection, Dialect dialect, String table) {
    List<String> problems;
    try {
      switch (dialect) {
        case MYSQL:
          problems = mysql(connection, table);
          break;
        case POSTGRESQL:
          problems = postgresql(connection, table);
          break;
        default:
          problems = sqlite(connection, table);
          break;
      }
    } catch (SQLException e) {
      throw new IdemStoreException(
          "idempotency store (" + table + "): cannot read the column definitions of table " + table + " to check that"
              + " they compare byte for byte: " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
    }
    if (!problems.isEmpty()) {
      throw new IdemStoreException(
          "idempotency store (" + table + "): table " + table + " compares record identities loosely, so two different"
              + " keys or principals could share one stored response: " + String.join("; ", problems)
              + ". Migrate the table (see the README, \"Upgrading the key table\"): " + migration(dialect, table), null);
    }
  }

  /** @return the statement (or, for SQLite, statements) that bring the table to the shipped schema */
  public static String migration(Dialect dialect, String table) {
    switch (dialect) {
      case MYSQL:
        return "ALTER TABLE " + table + " MODIFY principal VARBINARY(600) NOT NULL, MODIFY operation VARBINARY(600) NOT NULL,"
            + " MODIFY idem_key VARBINARY(255) NOT NULL, MODIFY owner_token VARBINARY(256) NULL";
      case POSTGRESQL:
        return "ALTER TABLE " + table + " ALTER COLUMN principal TYPE VARCHAR(200) COLLATE \"C\","
            + " ALTER COLUMN operation TYPE VARCHAR(200) COLLATE \"C\", ALTER COLUMN idem_key TYPE VARCHAR(255) COLLATE \"C\","
            + " ALTER COLUMN owner_token TYPE VARCHAR(64) COLLATE \"C\"";
      default:
        return "create a new table with the shipped sqlite.sql (named " + table + "_new), then INSERT INTO " + table
            + "_new SELECT * FROM " + table + "; DROP TABLE " + table + "; ALTER TABLE " + table + "_new RENAME TO " + table
            + "; and recreate the index on expires_at";
    }
  }

  private static List<String> mysql(Connection c, String table) throws SQLException {
    List<String> problems = new ArrayList<>();
    Map<String, String> seen = new LinkedHashMap<>();
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT LOWER(COLUMN_NAME), LOWER(DATA_TYPE), CHARACTER_MAXIMUM_LENGTH, LOWER(COLLATION_NAME)"
            + " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String column = rs.getString(1);
          int[] width = COLUMNS.get(column);
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
    missing(seen, problems);
    return problems;
  }

  private static List<String> postgresql(Connection c, String table) throws SQLException {
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
          if (!COLUMNS.containsKey(column)) {
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
    missing(seen, problems);
    return problems;
  }

  private static final Pattern COLLATE = Pattern.compile("(?i)\\bCOLLATE\\s+\"?([A-Za-z_0-9]+)\"?");

  private static List<String> sqlite(Connection c, String table) throws SQLException {
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
          if (!COLUMNS.containsKey(column)) {
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
    missing(seen, problems);
    return problems;
  }

  /** @return the COLLATE name in the column's definition in {@code ddl}, or {@code null} */
  private static String columnCollation(String ddl, String column) {
    Matcher def = Pattern.compile("(?i)[(,]\\s*[\"`\\[]?" + column + "[\"`\\]]?\\s+([^,]*)").matcher(ddl);
    if (!def.find()) {
      return null;
    }
    Matcher collate = COLLATE.matcher(def.group(1));
    return collate.find() ? collate.group(1) : null;
  }

  private static void missing(Map<String, String> seen, List<String> problems) {
    for (String column : COLUMNS.keySet()) {
      if (!seen.containsKey(column)) {
        problems.add("column " + column + " is missing");
      }
    }
  }
}
