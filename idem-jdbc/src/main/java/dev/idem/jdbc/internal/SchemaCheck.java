package dev.idem.jdbc.internal;

import dev.idem.core.IdemStoreException;
import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Verifies that an existing key table compares the columns that identify a record byte for byte:
 * {@code principal}, {@code operation}, {@code idem_key}, and {@code owner_token} (the fencing of
 * lease mode). A table created by an earlier version on MySQL or MariaDB used character columns
 * with PAD SPACE collations, under which {@code "k1 "} equals {@code "k1"}: one principal could be
 * replayed another's stored response. Such a table is refused with the column, the reason and the
 * statement that migrates it, rather than used.
 *
 * <p>Each dialect checks its own catalog ({@link Dialect#keyTableProblems}); what passes, per
 * dialect:
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
      problems = dialect.keyTableProblems(connection, table);
    } catch (SQLException e) {
      throw new IdemStoreException(
          "idempotency store (" + table + "): cannot read the column definitions of table " + table + " to check that"
              + " they compare byte for byte: " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
    }
    if (!problems.isEmpty()) {
      throw new IdemStoreException(
          "idempotency store (" + table + "): table " + table + " compares record identities loosely, so two different"
              + " keys or principals could share one stored response: " + String.join("; ", problems)
              + ". Migrate the table (see the README, \"Upgrading the key table\"): " + dialect.keyTableMigration(table), null);
    }
  }

  /**
   * @param column a column's name, lower case
   * @return its width in the shipped MySQL schema, bytes then characters, or {@code null} when the
   *     column is not one of those checked
   */
  public static int @Nullable [] width(String column) {
    return COLUMNS.get(column);
  }

  /**
   * Adds a problem for each checked column that {@code seen} lacks.
   *
   * @param seen the checked columns found, by lower-case name
   * @param problems where the problems go
   */
  public static void missing(Map<String, String> seen, List<String> problems) {
    for (String column : COLUMNS.keySet()) {
      if (!seen.containsKey(column)) {
        problems.add("column " + column + " is missing");
      }
    }
  }
}
