package dev.idem.jdbc.internal;

import dev.idem.core.IdemStoreException;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

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
   * What one round of a unit of work ended with, as a value: {@link Done} ends the rounds with a
   * result, {@link Again} asks for another round (the round's transaction was rolled back, so
   * nothing of it remains).
   *
   * @param <T> the result's type
   */
  public sealed interface Round<T> permits Round.Done, Round.Again {

    /** @param value the unit of work's result, may be {@code null} where {@code T} allows it */
    record Done<T>(T value) implements Round<T> {}

    /**
     * @param ifLast what {@link #rounds} throws when no round is left: a {@link SQLException} or
     *     a {@link RuntimeException}, never {@code null}
     */
    record Again<T>(Exception ifLast) implements Round<T> {
      public Again {
        if (!(ifLast instanceof SQLException) && !(ifLast instanceof RuntimeException)) {
          throw new IllegalArgumentException("ifLast must be an SQLException or a RuntimeException", ifLast);
        }
      }
    }

    /** @return a round that ends the rounds with {@code value} */
    static <T> Round<T> done(T value) {
      return new Done<>(value);
    }

    /** @return a round that asks for another, or ends with {@code ifLast} thrown when none is left */
    static <T> Round<T> again(Exception ifLast) {
      return new Again<>(ifLast);
    }
  }

  /** One round of a unit of work, run by {@link #rounds}. */
  @FunctionalInterface
  public interface RoundBody<T> {
    /**
     * @param round 0 for the first round, up to {@link #MAX_ATTEMPTS} - 1
     * @return how the round ended, never {@code null}
     */
    Round<T> run(int round) throws SQLException;
  }

  /**
   * The one loop every "run it again" of Idem's JDBC code runs on: runs {@code body} until a round
   * is {@link Round.Done}, at most {@value #MAX_ATTEMPTS} rounds, pausing before each repetition
   * (see the class description).
   *
   * @return the value of the round that was done
   * @throws SQLException the last round's {@link Round.Again#ifLast()} when it is one, or any
   *     failure the body throws
   * @throws RuntimeException the last round's {@link Round.Again#ifLast()} when it is one, any the
   *     body throws, or {@link IdemStoreException} if the thread is interrupted during a pause
   */
  public static <T> T rounds(RoundBody<T> body) throws SQLException {
    for (int round = 0; ; round++) {
      Round<T> result = body.run(round);
      if (result instanceof Round.Done<T> done) {
        return done.value();
      }
      Exception last = ((Round.Again<T>) result).ifLast();
      if (round >= MAX_ATTEMPTS - 1) {
        if (last instanceof SQLException sql) {
          throw sql;
        }
        throw (RuntimeException) last;
      }
      pause(round);
    }
  }

  /**
   * {@link #rounds} for a body that never throws {@link SQLException} (it turns its failures into
   * the store's exceptions itself).
   */
  public static <T> T roundsUnchecked(RoundBody<T> body) {
    try {
      return rounds(body);
    } catch (SQLException e) {
      throw new IllegalStateException("a round body that turns its failures into exceptions of its own threw", e);
    }
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
    return rounds(round -> {
      try {
        return Round.done(work.run(round + 1));
      } catch (SQLException e) {
        if (!isConflict(e)) {
          throw e;
        }
        return Round.again(e);
      }
    });
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
  public static @Nullable SQLException conflictIn(Throwable failure) {
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
