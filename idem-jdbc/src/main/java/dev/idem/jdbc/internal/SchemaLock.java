package dev.idem.jdbc.internal;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;

/**
 * What the dialects' table creation ({@code Dialect#createTables}) shares: the stable key of a
 * table's schema lock, the pause between tries, running a script. Stateless and thread-safe. Not
 * public API.
 */
public final class SchemaLock {

  private SchemaLock() {}

  /** @return a stable 64-bit key for the table's name (FNV-1a), the same in every process */
  public static long key(String table) {
    long hash = 0xcbf29ce484222325L;
    for (byte b : ("idem.schema:" + table.toLowerCase(Locale.ROOT)).getBytes(StandardCharsets.UTF_8)) {
      hash ^= b & 0xff;
      hash *= 0x100000001b3L;
    }
    return hash;
  }

  /**
   * Sleeps 10 ms between two tries.
   *
   * @throws SQLException if the thread is interrupted (its flag is set again)
   */
  public static void pause() throws SQLException {
    try {
      Thread.sleep(10);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLException("interrupted while waiting to create the schema", e);
    }
  }

  /** Runs {@code statements} in order on one statement object. */
  public static void execute(Connection c, List<String> statements) throws SQLException {
    try (Statement st = c.createStatement()) {
      for (String statement : statements) {
        st.execute(statement);
      }
    }
  }

  /** Rolls back, adding a failure of the rollback to {@code failure}. */
  public static void rollbackQuietly(Connection c, Exception failure) {
    try {
      c.rollback();
    } catch (SQLException e) {
      failure.addSuppressed(e);
    }
  }
}
