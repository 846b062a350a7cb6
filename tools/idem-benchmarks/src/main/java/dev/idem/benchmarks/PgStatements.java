package dev.idem.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What each SQL statement of one benchmark run cost on PostgreSQL, from the server's {@code
 * pg_stat_statements} (calls and executor time, per normalized statement and per database): {@link
 * HttpLoad} reads a variant's database before and after each measured run and keeps the
 * difference, so a report can say which statements a create with Idem runs that the floor's does
 * not, and what they cost.
 *
 * <p>The view counts only when the server loads the module ({@code shared_preload_libraries =
 * 'pg_stat_statements'}, a restart); {@link #open} says why it cannot be read otherwise and the
 * report then has no statement table. Executor time is wall time inside the executor (CPU plus
 * any wait for a lock or a read), not CPU alone; the commit at the end of a transaction (and its
 * WAL flush) is not in it, so a variant with more commits costs more than its statements say. Not
 * thread-safe: one benchmark thread uses it.
 */
final class PgStatements implements AutoCloseable {

  /**
   * One normalized statement's counters.
   *
   * @param query the statement as the view normalizes it (constants as {@code $n})
   * @param calls times executed
   * @param millis total executor time, in milliseconds
   */
  record Stat(String query, long calls, double millis) {
    Stat plus(Stat o) {
      return new Stat(query, calls + o.calls, millis + o.millis);
    }
  }

  /**
   * The statements of one workload in one cell, summed over its runs.
   *
   * @param requests the requests the runs sent (warm-up seconds included, as the statements are)
   * @param byQuery counters per query id
   */
  record Cell(long requests, Map<Long, Stat> byQuery) {
    Cell plus(long moreRequests, Map<Long, Stat> more) {
      Map<Long, Stat> sum = new HashMap<>(byQuery);
      more.forEach((id, s) -> sum.merge(id, s, Stat::plus));
      return new Cell(requests + moreRequests, sum);
    }

    /** @return the statements of at least {@code minCallsPerRequest} calls a request, the costliest first */
    List<Stat> perRequest(double minCallsPerRequest) {
      List<Stat> out = new ArrayList<>();
      for (Stat s : byQuery.values()) {
        if (requests > 0 && s.calls() / (double) requests >= minCallsPerRequest) {
          out.add(s);
        }
      }
      out.sort(Comparator.comparingDouble(Stat::millis).reversed());
      return out;
    }
  }

  private final Connection admin;
  private final PreparedStatement read;

  private PgStatements(Connection admin) throws SQLException {
    this.admin = admin;
    this.read = admin.prepareStatement("SELECT s.queryid, s.query, s.calls, s.total_exec_time FROM pg_stat_statements s"
        + " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = ? AND s.queryid IS NOT NULL");
  }

  /**
   * Opens a reader on the server of {@code adminUrl}, creating the extension in that (admin)
   * database if it is not there.
   *
   * @param why told the reason when the view cannot be read (the module not loaded, no right)
   * @return the reader, or {@code null} when the view cannot be read
   */
  static @Nullable PgStatements open(String adminUrl, java.util.function.Consumer<String> why) {
    Connection c = null;
    try {
      c = DriverManager.getConnection(adminUrl);
      try (Statement st = c.createStatement()) {
        st.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      }
      PgStatements reader = new PgStatements(c);
      if (reader.snapshot("postgres") == null) { // the real query once: the view's columns differ before PostgreSQL 13
        throw new SQLException("the pg_stat_statements view cannot be read with total_exec_time (PostgreSQL 13 or later)");
      }
      return reader;
    } catch (SQLException e) {
      why.accept(e.getMessage());
      if (c != null) {
        try {
          c.close();
        } catch (SQLException ignored) {
          // the reason above is what the report says
        }
      }
      return null;
    }
  }

  /**
   * @param database a database's name
   * @return its statements' counters now, by query id; {@code null} if they cannot be read (the
   *     run is then left out of the statements, never counted with what it did not read)
   */
  @Nullable Map<Long, Stat> snapshot(String database) {
    Map<Long, Stat> out = new LinkedHashMap<>();
    try {
      read.setString(1, database);
      try (ResultSet rs = read.executeQuery()) {
        while (rs.next()) {
          // one query id can have several rows (per user, per top level): sum them
          out.merge(rs.getLong(1), new Stat(rs.getString(2), rs.getLong(3), rs.getDouble(4)), Stat::plus);
        }
      }
    } catch (SQLException e) {
      System.err.println("pg_stat_statements: cannot read " + database + ": " + e.getMessage());
      return null;
    }
    return out;
  }

  /** @return what ran between two snapshots of one database: the statements whose calls grew */
  static Map<Long, Stat> between(Map<Long, Stat> before, Map<Long, Stat> after) {
    Map<Long, Stat> out = new LinkedHashMap<>();
    after.forEach((id, s) -> {
      Stat b = before.get(id);
      long calls = s.calls() - (b == null ? 0 : b.calls());
      if (calls > 0) {
        out.put(id, new Stat(s.query(), calls, s.millis() - (b == null ? 0 : b.millis())));
      }
    });
    return out;
  }

  /** @return the database name of a PostgreSQL JDBC URL ({@code jdbc:postgresql://host:port/name?...}) */
  static String databaseOf(String jdbcUrl) {
    int q = jdbcUrl.indexOf('?');
    String base = q < 0 ? jdbcUrl : jdbcUrl.substring(0, q);
    return base.substring(base.lastIndexOf('/') + 1);
  }

  @Override
  public void close() throws SQLException {
    admin.close();
  }
}
