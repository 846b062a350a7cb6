package dev.idem.jdbc;

import java.sql.SQLDataException;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import org.jspecify.annotations.Nullable;

/**
 * What an SQL failure says about a retry of the same request: whether it can succeed later (the
 * database's fault, answered "retry later with the same key", HTTP 503), can never succeed as it
 * is (the request's data, HTTP 4xx), or points at a bug or a misconfiguration (HTTP 500). Idem
 * uses it to tell a store outage from a request's own failure; an application can use it to answer
 * its own database errors the same way.
 *
 * <p>The SQLState decides (ISO/IEC 9075 classes, as PostgreSQL, MySQL and MariaDB report them),
 * then the vendor code where the SQLState is the generic {@code HY000} (MySQL, MariaDB) or absent
 * (sqlite-jdbc), then the JDBC 4 subclass of {@link SQLException}:
 *
 * <table>
 *   <caption>Classification</caption>
 *   <tr><th>kind</th><th>SQLState</th><th>vendor codes and JDBC types</th></tr>
 *   <tr><td>{@link #TRANSIENT}</td><td>08 (connection), 40 (rollback: serialization failure,
 *       deadlock), 53 (insufficient resources), 55P03 (lock not available), 57 (operator
 *       intervention: admin or crash shutdown, cannot connect now, statement timeout), 58 (system
 *       error), 70 (MySQL/MariaDB: query interrupted or timed out), HYT00/HYT01 (timeouts)</td>
 *       <td>MySQL/MariaDB 1205 (lock wait timeout), 1213 (deadlock), 2002, 2003, 2006, 2013
 *       (connection); SQLite 5 BUSY, 6 LOCKED, 7 NOMEM, 10
 *       IOERR, 13 FULL, 14 CANTOPEN, 15 PROTOCOL; {@link SQLTransientException}, {@link
 *       SQLRecoverableException}, {@link SQLNonTransientConnectionException}</td></tr>
 *   <tr><td>{@link #REJECTED}</td><td>22 (data exception: a value too long, out of range, or
 *       not storable, such as U+0000 in PostgreSQL text), 23 (integrity constraint violation),
 *       54 (program limit exceeded, such as an index row too large)</td><td>MySQL/MariaDB 1265
 *       (data truncated), 1366 (incorrect string value), reported as HY000; SQLite 18 TOOBIG,
 *       19 CONSTRAINT, 20 MISMATCH, 25 RANGE; {@link SQLDataException}, {@link
 *       SQLIntegrityConstraintViolationException}</td></tr>
 *   <tr><td>{@link #FAILED}</td><td>anything else, for example 42 (syntax or access rule), 25
 *       (invalid transaction state, such as 25P02 after an earlier error), 0A (feature not
 *       supported), XX (internal error)</td><td></td></tr>
 * </table>
 *
 * <p>Stateless and thread-safe.
 */
public enum SqlFailure {

  /**
   * The database or the connection failed, or a conflict rolled the transaction back: the same
   * request can succeed later. Over HTTP: 503 with {@code Retry-After}.
   */
  TRANSIENT,

  /**
   * The database refused the request's data (a data exception, a constraint violation): the same
   * request fails the same way until the data or the state it conflicts with changes. Over HTTP:
   * a 4xx chosen by what was refused (400, 409, 422), never "retry later".
   */
  REJECTED,

  /**
   * Neither: the statement or the schema is wrong, or the transaction was misused. A retry fails
   * the same way until the application or the database is fixed. Over HTTP: 500.
   */
  FAILED;

  /**
   * Classifies the first {@link SQLException} in {@code failure}'s cause chain (itself included).
   *
   * @param failure any throwable, or {@code null}
   * @return the kind; {@link #FAILED} when there is no {@link SQLException} in the chain
   */
  public static SqlFailure of(@Nullable Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLException) {
        return of((SQLException) t);
      }
    }
    return FAILED;
  }

  /**
   * Classifies one {@link SQLException} by its SQLState, its vendor code and its JDBC type (see the
   * class description); chained exceptions ({@link SQLException#getNextException()}) are not read.
   *
   * @param e the failure, never {@code null}
   * @return the kind, never {@code null}
   */
  public static SqlFailure of(SQLException e) {
    String state = e.getSQLState();
    if (state != null && state.length() >= 2 && !state.startsWith("HY") && !state.equals("S1000")) {
      String cls = state.substring(0, 2);
      switch (cls) {
        case "08":
        case "40":
        case "53":
        case "57":
        case "58":
        case "70":
          return TRANSIENT;
        case "22":
        case "23":
        case "54":
          return REJECTED;
        default:
          return state.equals("55P03") ? TRANSIENT : FAILED;
      }
    }
    if ("HYT00".equals(state) || "HYT01".equals(state)) {
      return TRANSIENT;
    }
    SqlFailure byCode = byVendorCode(e);
    if (byCode != null) {
      return byCode;
    }
    if (e instanceof SQLTransientException || e instanceof SQLRecoverableException
        || e instanceof SQLNonTransientConnectionException) {
      return TRANSIENT;
    }
    if (e instanceof SQLDataException || e instanceof SQLIntegrityConstraintViolationException) {
      return REJECTED;
    }
    return FAILED;
  }

  private static @Nullable SqlFailure byVendorCode(SQLException e) {
    int code = e.getErrorCode();
    if (e.getClass().getName().startsWith("org.sqlite.")) {
      switch (code & 0xFF) { // the primary result code
        case 5: case 6: case 7: case 10: case 13: case 14: case 15:
          return TRANSIENT;
        case 18: case 19: case 20: case 25:
          return REJECTED;
        default:
          return FAILED;
      }
    }
    switch (code) {
      case 1205: case 1213: case 2002: case 2003: case 2006: case 2013:
        return TRANSIENT;
      case 1265: case 1366:
        return REJECTED;
      default:
        return null;
    }
  }
}
