package dev.idem.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Runs the statements that create a table and its indexes ({@code CREATE ... IF NOT EXISTS}) so
 * that any number of processes, or connections of one process, may run them at the same moment
 * on the same database: each table and index is made once, and none of the creators fails because
 * another made it first. Every table Idem creates (the key table, the step table, the outbox)
 * goes through here.
 *
 * <p>{@code IF NOT EXISTS} alone is not enough: on PostgreSQL two sessions that both find the
 * object missing both insert it into the catalog, and the second fails with a unique violation on
 * {@code pg_class} or {@code pg_type} (SQLState 23505) or "already exists" (42P07). What this does,
 * per database:
 *
 * <ul>
 *   <li>PostgreSQL: the statements run in one transaction that first takes a transaction-scoped
 *       advisory lock on the table's name ({@code pg_try_advisory_xact_lock}, tried again for up
 *       to {@link #LOCK_WAIT}), so creators of one table
 *       run one after the other and each later one finds the objects made; a duplicate-object
 *       error (23505, 42P07, 42710) from a creator that does not take the lock rolls the
 *       transaction back, and it runs again (its {@code IF NOT EXISTS} then sees the objects).
 *   <li>MySQL and MariaDB, whose DDL commits on its own: a named lock ({@code GET_LOCK}) on the
 *       database and table name around the statements, released afterwards; where the server
 *       refuses named locks (some Galera set-ups), or the lock is not granted within {@link
 *       #LOCK_WAIT}, the statements run without it. "Table already
 *       exists" (1050) and "duplicate key name" (1061) count as done.
 *   <li>SQLite, where a write takes the database's single write lock: each statement runs on its
 *       own, waiting for that lock at least {@link #LOCK_WAIT} (the connection's busy timeout is
 *       raised for the call when it is shorter, then restored); "already exists" counts as done, and
 *       a statement refused as busy runs again until the wait is spent.
 * </ul>
 *
 * <p>With the connection in auto-commit mode, the statements are committed when this returns
 * (and the connection is back in auto-commit mode). With auto-commit off, they join the open
 * transaction (on MySQL and MariaDB DDL commits it regardless): the caller's commit or rollback
 * decides them, and on PostgreSQL the advisory lock is held until then, so other creators of the
 * same table wait for that transaction.
 *
 * <p>Stateless and thread-safe; a connection passed in is used by the calling thread only.
 */
public final class SchemaCreation {

  /** How long a creator waits for another creator of the same table before it gives up. */
  public static final Duration LOCK_WAIT = Duration.ofSeconds(60);

  /** PostgreSQL: how many times the transaction runs when a creator without the lock raced it. */
  private static final int ATTEMPTS = 3;

  private SchemaCreation() {}

  /**
   * Runs {@code statements} on {@code connection}, safe against other creators at the same moment;
   * see the class description for how, per database.
   *
   * @param connection an open connection; see the class description for auto-commit
   * @param table the name of the table the statements create (the lock's name), a plain SQL
   *     identifier
   * @param statements the statements, in order; each must succeed when its object already exists
   *     ({@code CREATE TABLE IF NOT EXISTS}, {@code CREATE INDEX IF NOT EXISTS})
   * @throws SQLException if a statement fails for another reason than its object existing, or
   *     fails so on every attempt, or if PostgreSQL's advisory lock is not granted within {@link
   *     #LOCK_WAIT} (SQLState 55P03); on PostgreSQL in auto-commit mode the transaction is then
   *     rolled back
   * @throws NullPointerException if an argument is {@code null}
   */
  public static void run(Connection connection, String table, List<String> statements) throws SQLException {
    run(connection, table, statements, false);
  }

  /**
   * As {@link #run}, for a caller that found the table missing and creates it whole: on MySQL and
   * MariaDB, when the table exists once the named lock is held, another creator made it (its whole
   * script under the same lock) and nothing runs. Running the script again is no mere no-op on
   * Galera, where every DDL, {@code CREATE ... IF NOT EXISTS} included, replicates in total order
   * and aborts the open transactions on the table: the first requests' claims, whose effects then
   * ran again.
   *
   * @throws SQLException as {@link #run}
   * @throws NullPointerException if an argument is {@code null}
   */
  public static void runIfMissing(Connection connection, String table, List<String> statements) throws SQLException {
    run(connection, table, statements, true);
  }

  private static void run(Connection connection, String table, List<String> statements, boolean ifMissing) throws SQLException {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(statements, "statements");
    switch (Dialect.of(connection)) {
      case POSTGRESQL -> postgresql(connection, table, statements);
      case MYSQL -> mysql(connection, table, statements, ifMissing);
      case SQLITE -> sqlite(connection, statements);
    }
  }

  private static void postgresql(Connection c, String table, List<String> statements) throws SQLException {
    if (!c.getAutoCommit()) {
      // The caller's transaction: the lock is held until it ends, the caller decides the outcome.
      advisoryLock(c, table);
      execute(c, statements);
      return;
    }
    for (int attempt = 1; ; attempt++) {
      c.setAutoCommit(false);
      try {
        advisoryLock(c, table);
        execute(c, statements);
        c.commit();
        return;
      } catch (SQLException | RuntimeException e) {
        // Rolled back before auto-commit is restored: restoring it would commit what ran.
        rollbackQuietly(c, e);
        if (attempt >= ATTEMPTS || !(e instanceof SQLException sql && postgresDuplicate(sql))) {
          throw e;
        }
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  /**
   * Takes the table's transaction-scoped advisory lock, trying again until {@link #LOCK_WAIT} is
   * spent: a creator never waits without bound on another (a start-up hung on a stuck transaction).
   */
  private static void advisoryLock(Connection c, String table) throws SQLException {
    long deadline = System.nanoTime() + LOCK_WAIT.toNanos();
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_xact_lock(?)")) {
      ps.setLong(1, lockKey(table));
      while (true) {
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next() && rs.getBoolean(1)) {
            return;
          }
        }
        if (System.nanoTime() > deadline) {
          throw new SQLException("another session held the schema lock of table " + table + " for longer than "
              + LOCK_WAIT.toSeconds() + " s (pg_advisory_xact_lock " + lockKey(table) + ")", "55P03");
        }
        pause();
      }
    }
  }

  /** @return a stable 64-bit key for the table's name (FNV-1a), the same in every process */
  static long lockKey(String table) {
    long hash = 0xcbf29ce484222325L;
    for (byte b : ("idem.schema:" + table.toLowerCase(Locale.ROOT)).getBytes(StandardCharsets.UTF_8)) {
      hash ^= b & 0xff;
      hash *= 0x100000001b3L;
    }
    return hash;
  }

  private static boolean postgresDuplicate(SQLException e) {
    String state = e.getSQLState();
    return "23505".equals(state) || "42P07".equals(state) || "42710".equals(state);
  }

  private static void mysql(Connection c, String table, List<String> statements, boolean ifMissing) throws SQLException {
    String lock = namedLock(c, table);
    boolean locked = false;
    try {
      try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, ?)")) {
        ps.setString(1, lock);
        ps.setLong(2, LOCK_WAIT.toSeconds());
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
    return name.length() <= 64 ? name : "idem.schema." + Long.toHexString(lockKey(name));
  }

  private static void sqlite(Connection c, List<String> statements) throws SQLException {
    int previous = -1;
    if (c.getAutoCommit()) {
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("PRAGMA busy_timeout")) {
        int timeout = rs.next() ? rs.getInt(1) : 0;
        if (timeout < LOCK_WAIT.toMillis()) {
          previous = timeout;
          st.execute("PRAGMA busy_timeout = " + LOCK_WAIT.toMillis());
        }
      }
    }
    try (Statement st = c.createStatement()) {
      long deadline = System.nanoTime() + LOCK_WAIT.toNanos();
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
            pause();
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

  private static void pause() throws SQLException {
    try {
      Thread.sleep(10);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLException("interrupted while waiting to create the schema", e);
    }
  }

  private static void execute(Connection c, List<String> statements) throws SQLException {
    try (Statement st = c.createStatement()) {
      for (String statement : statements) {
        st.execute(statement);
      }
    }
  }

  private static void rollbackQuietly(Connection c, Exception failure) {
    try {
      c.rollback();
    } catch (SQLException e) {
      failure.addSuppressed(e);
    }
  }
}
