package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SqlFailureTest {

  @TempDir Path dir;

  /**
   * Regression: on PostgreSQL a title holding U+0000 fails with SQLState 22021 and was answered
   * "503 store unavailable, retry later" forever; a data exception is the request's fault.
   */
  @Test
  void aNulCharacterThatPostgresqlCannotStoreIsTheRequestsFaultNotAnOutage() {
    assertThat(SqlFailure.of(new SQLException("invalid byte sequence for encoding \"UTF8\": 0x00", "22021")))
        .isEqualTo(SqlFailure.REJECTED);
  }

  @Test
  void dataExceptionsAndConstraintViolationsAreRejectedRequests() {
    for (String state : new String[] {"22001", "22003", "22P02", "23505", "23503", "23514", "23000", "54000"}) {
      assertThat(SqlFailure.of(new SQLException("x", state))).as(state).isEqualTo(SqlFailure.REJECTED);
    }
  }

  @Test
  void connectionLossConflictsShortagesAndShutdownsAreTransient() {
    for (String state : new String[] {"08006", "08S01", "08003", "40001", "40P01", "53300", "53100", "55P03", "57P01", "57P02",
        "57P03", "57014", "58030", "70100", "HYT00"}) {
      assertThat(SqlFailure.of(new SQLException("x", state))).as(state).isEqualTo(SqlFailure.TRANSIENT);
    }
  }

  @Test
  void syntaxErrorsAndAbortedTransactionsAreFailuresNotOutages() {
    for (String state : new String[] {"42601", "42P01", "42501", "25P02", "0A000", "XX000"}) {
      assertThat(SqlFailure.of(new SQLException("x", state))).as(state).isEqualTo(SqlFailure.FAILED);
    }
    assertThat(SqlFailure.of(new SQLException("no state"))).isEqualTo(SqlFailure.FAILED);
    assertThat(SqlFailure.of(new IllegalStateException("not SQL"))).isEqualTo(SqlFailure.FAILED);
    assertThat(SqlFailure.of((Throwable) null)).isEqualTo(SqlFailure.FAILED);
  }

  @Test
  void mysqlGenericStatesAreReadByTheirVendorCode() {
    assertThat(SqlFailure.of(new SQLException("Lock wait timeout exceeded", "HY000", 1205))).isEqualTo(SqlFailure.TRANSIENT);
    assertThat(SqlFailure.of(new SQLException("Incorrect string value", "HY000", 1366))).isEqualTo(SqlFailure.REJECTED);
    assertThat(SqlFailure.of(new SQLException("something else", "HY000", 1105))).isEqualTo(SqlFailure.FAILED);
  }

  @Test
  void jdbcSubclassesDecideWhenThereIsNoState() {
    assertThat(SqlFailure.of(new SQLTransientConnectionException("gone"))).isEqualTo(SqlFailure.TRANSIENT);
    assertThat(SqlFailure.of(new SQLIntegrityConstraintViolationException("dup"))).isEqualTo(SqlFailure.REJECTED);
  }

  @Test
  void theFirstSqlExceptionInTheCauseChainDecides() {
    RuntimeException wrapped = new RuntimeException("translated", new SQLException("dup", "23505"));
    assertThat(SqlFailure.of(wrapped)).isEqualTo(SqlFailure.REJECTED);
  }

  @Test
  void sqliteResultCodesAreReadFromTheDriversOwnExceptions() throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("f.db")); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
      st.execute("INSERT INTO t VALUES (1, 'a')");
      SQLException constraint = null;
      try {
        st.execute("INSERT INTO t VALUES (1, 'b')");
      } catch (SQLException e) {
        constraint = e;
      }
      assertThat((Object) constraint).isNotNull();
      assertThat(SqlFailure.of(constraint)).isEqualTo(SqlFailure.REJECTED);
      SQLException syntax = null;
      try {
        st.execute("SELEC 1");
      } catch (SQLException e) {
        syntax = e;
      }
      assertThat(SqlFailure.of(syntax)).isEqualTo(SqlFailure.FAILED);
    }
  }
}
