package dev.idem.jdbc;

import dev.idem.jdbc.internal.SchemaLock;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
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
 * per database (each {@link Dialect} does its own, {@link Dialect#createTables}):
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
 *   <li>H2, where DDL commits on its own and there are no advisory locks: each statement runs on
 *       its own; "already exists" counts as done, and a statement that fails otherwise (two
 *       creators of one index can fail one with a general error) runs again until {@link
 *       #LOCK_WAIT} is spent, when its {@code IF NOT EXISTS} sees the object.
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
    Dialect.of(connection).createTables(connection, table, statements, ifMissing);
  }

  /** @return a stable 64-bit key for the table's name (FNV-1a), the same in every process */
  static long lockKey(String table) {
    return SchemaLock.key(table);
  }
}
