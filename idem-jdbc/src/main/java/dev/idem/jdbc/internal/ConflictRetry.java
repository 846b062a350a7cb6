package dev.idem.jdbc.internal;

import dev.idem.core.IdemStoreException;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * "Run it again after a serialization failure or a deadlock", for the transactions and single
 * statements Idem runs on its own (in the spirit of jdbi's {@code SerializableTransactionRunner}):
 * at most {@value #MAX_ATTEMPTS} attempts in all, with a random pause of 1 to 20 × n ms before the
 * n-th repetition so that racers that deadlocked do not meet again in the same order at once.
 *
 * <p>What counts as such a conflict ({@link #isConflict}): SQLState class 40 (transaction
 * rollback: PostgreSQL's 40001 serialization failure and 40P01 deadlock, MySQL/MariaDB's 40001
 * deadlock), and MySQL/MariaDB vendor code 1213 (deadlock) when a driver or wrapper reports it with
 * another SQLState. In each case the database has rolled the whole transaction back, so running it
 * again cannot do anything twice. Not retried: MySQL's 1205 (lock wait timeout), which by default
 * rolls back only the statement and has already waited a whole {@code innodb_lock_wait_timeout}
 * (a repetition would double the wait the caller sees; {@code SqlFailure} reports it as transient
 * instead, "retry later"); SQLite's {@code SQLITE_BUSY}, which already waited its busy timeout.
 *
 * <p>Never used inside a caller's transaction: only the owner of a transaction may run it again.
 * Stateless and thread-safe. Not public API.
 */
public final class ConflictRetry {

  /** Attempts in all, the first included. */
  public static final int MAX_ATTEMPTS = 5;

  private ConflictRetry() {}

  /** One attempt of a unit of work that the database rolls back entirely on a conflict. */
  @FunctionalInterface
  public interface Attempt<T> {
    /**
     * @param attempt 1 for the first attempt, up to {@link #MAX_ATTEMPTS}
     * @return the result
     */
    T run(int attempt) throws SQLException;
  }

  /**
   * Runs {@code work} until it ends without a {@linkplain #isConflict conflict}, at most {@value
   * #MAX_ATTEMPTS} times, pausing before each repetition (see the class description).
   *
   * @return what the successful attempt returned
   * @throws SQLException the last attempt's conflict once the attempts are used up, or at once any
   *     other failure of an attempt
   * @throws IdemStoreException if the thread is interrupted during a pause
   */
  public static <T> T run(Attempt<T> work) throws SQLException {
    for (int attempt = 1; ; attempt++) {
      try {
        return work.run(attempt);
      } catch (SQLException e) {
        if (!isConflict(e) || attempt >= MAX_ATTEMPTS) {
          throw e;
        }
      }
      pause(attempt - 1);
    }
  }

  /** @return whether the database rolled the transaction back because of a conflict that a repetition may not meet */
  public static boolean isConflict(SQLException e) {
    String state = e.getSQLState();
    return state != null && state.startsWith("40") || e.getErrorCode() == 1213 && isMysqlFamily(e);
  }

  private static boolean isMysqlFamily(SQLException e) {
    String name = e.getClass().getName();
    return name.startsWith("org.mariadb.") || name.startsWith("com.mysql.") || "HY000".equals(e.getSQLState());
  }

  /** @return the first {@linkplain #isConflict conflict} in {@code failure}'s cause chain, or {@code null} */
  public static SQLException conflictIn(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLException && isConflict((SQLException) t)) {
        return (SQLException) t;
      }
    }
    return null;
  }

  /**
   * Waits a random 1 to 20 × (round + 1) ms.
   *
   * @param round the failed round, from 0
   * @throws IdemStoreException if interrupted (the interrupt flag is set again)
   */
  public static void pause(int round) {
    try {
      Thread.sleep(ThreadLocalRandom.current().nextLong(1, 20L * (round + 1) + 1));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IdemStoreException("interrupted while waiting to run the transaction again", e);
    }
  }
}
