package dev.idem.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import org.jspecify.annotations.Nullable;

/**
 * Runs the key table's statements ({@link dev.idem.jdbc.dialect.KeyTableSql}, which a dialect
 * writes) on a connection: binding, the row they read, and the statements that return a row set
 * and a count in one round trip. Stateless.
 */
public final class SqlRunner {

  private SqlRunner() {}

  /**
   * Prepares {@code sql} on {@code c} and binds {@code params} in order: {@link String}, {@link
   * Long}, {@link Integer}, {@code byte[]}, or {@code null} (bound as an SQL INTEGER NULL: the only
   * parameter that may be absent is the clear-text status).
   *
   * @return the statement; the caller closes it
   */
  public static PreparedStatement prepare(Connection c, String sql, @Nullable Object... params) throws SQLException {
    PreparedStatement ps = c.prepareStatement(sql);
    try {
      for (int i = 0; i < params.length; i++) {
        Object p = params[i];
        if (p == null) {
          ps.setNull(i + 1, Types.INTEGER);
        } else if (p instanceof String) {
          ps.setString(i + 1, (String) p);
        } else if (p instanceof Long) {
          ps.setLong(i + 1, (Long) p);
        } else if (p instanceof Integer) {
          ps.setInt(i + 1, (Integer) p);
        } else if (p instanceof byte[]) {
          ps.setBytes(i + 1, (byte[]) p);
        } else {
          throw new IllegalArgumentException("unsupported parameter type " + p.getClass());
        }
      }
      return ps;
    } catch (SQLException | RuntimeException e) {
      ps.close();
      throw e;
    }
  }

  /** @return the number of rows {@code sql} changed, with {@code params} bound as {@link #prepare} does */
  public static int update(Connection c, String sql, @Nullable Object... params) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql, params)) {
      return ps.executeUpdate();
    }
  }

  /** @return the row {@code sql} (one of {@code KeyTableSql.read}, {@code KeyTableSql.readLatest}) found, or {@code null} */
  public static @Nullable KeyRow readRow(Connection c, String sql, String principal, String operation, String key) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql, principal, operation, key); ResultSet rs = ps.executeQuery()) {
      return rs.next() ? KeyRow.read(rs) : null;
    }
  }

  /**
   * What a {@link #readThenWrite} statement returned.
   *
   * @param row the row its read found, or {@code null}
   * @param written how many rows its write changed
   */
  public record RowThenCount(@Nullable KeyRow row, int written) {}

  /**
   * Runs one of the statements that read the key's row and then write, in one round trip ({@link
   * #lookupAndClaim}, {@code KeyTableSql.lookupAndClaimThenSavepoint}, {@code KeyTableSql.leaseReadThenInsert}), with
   * {@code params} bound as {@link #prepare} does.
   *
   * @return the read's row and the write's row count
   * @throws SQLException if either fails, or the driver returns other results than a row set then a count
   */
  public static RowThenCount readThenWrite(Connection c, String sql, @Nullable Object... params) throws SQLException {
    return readThenWriteAfter(c, sql, 0, params);
  }


  /**
   * As {@link #update}, for a statement whose count follows {@code resultSets} result sets (a
   * {@code KeyTableSql.boundedClaim} on PostgreSQL); the results after the count are not read.
   *
   * @return the count
   * @throws SQLException if the statement fails, or returns other results than those
   */
  public static int updateAfter(Connection c, String sql, int resultSets, @Nullable Object... params) throws SQLException {
    if (resultSets == 0) {
      return update(c, sql, params);
    }
    try (PreparedStatement ps = prepare(c, sql, params)) {
      if (executeSkipping(ps, resultSets) || ps.getUpdateCount() < 0) {
        throw new SQLException("the claim returned no row count");
      }
      return ps.getUpdateCount();
    }
  }


  /**
   * As {@link #readThenWrite}, for a statement whose read follows {@code resultSets} result sets (a
   * {@code KeyTableSql.boundedLookupAndClaim}).
   */
  public static RowThenCount readThenWriteAfter(Connection c, String sql, int resultSets, @Nullable Object... params) throws SQLException {
    try (PreparedStatement ps = prepare(c, sql, params)) {
      if (!executeSkipping(ps, resultSets)) {
        throw new SQLException("the read before the write returned no result set");
      }
      KeyRow row;
      try (ResultSet rs = ps.getResultSet()) {
        row = rs.next() ? KeyRow.read(rs) : null;
      }
      if (ps.getMoreResults() || ps.getUpdateCount() < 0) {
        throw new SQLException("the write after the read returned no row count");
      }
      return new RowThenCount(row, ps.getUpdateCount());
    }
  }

  /**
   * Executes {@code ps} and closes the first {@code resultSets} result sets (the bound's {@code
   * set_config} rows before a bounded claim).
   *
   * @return whether the result after them is a result set
   * @throws SQLException if the statement fails, or returns fewer result sets first
   */
  private static boolean executeSkipping(PreparedStatement ps, int resultSets) throws SQLException {
    boolean resultSet = ps.execute();
    for (int i = 0; i < resultSets; i++) {
      if (!resultSet) {
        throw new SQLException("the statements before the claim returned no result set");
      }
      ps.getResultSet().close();
      resultSet = ps.getMoreResults();
    }
    return resultSet;
  }
}
