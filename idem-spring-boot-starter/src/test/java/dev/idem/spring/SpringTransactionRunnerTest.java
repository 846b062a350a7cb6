package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemStoreException;
import dev.idem.jdbc.TransactionFailedException;
import dev.idem.spring.internal.SpringTransactionRunner;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionSystemException;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;
import org.sqlite.SQLiteDataSource;

/** How the Spring runner reports what Spring's transaction manager did, in the runner's terms. */
class SpringTransactionRunnerTest {

  @TempDir Path dir;

  private SQLiteDataSource dataSource(Path file) {
    SQLiteDataSource ds = new SQLiteDataSource();
    ds.setUrl("jdbc:sqlite:" + file);
    return ds;
  }

  /**
   * A {@code @Transactional} method the handler called failed and marked the shared transaction
   * rollback-only; the handler still answered. The commit then rolls back with Spring's
   * UnexpectedRollbackException, which must say "rollback-only" (the request's own failure, a 500),
   * not "the commit failed" (which may have committed).
   */
  @Test
  void aTransactionMarkedRollbackOnlyByANestedOneIsReportedAsRollbackOnly() {
    SQLiteDataSource ds = dataSource(dir.resolve("a.db"));
    DataSourceTransactionManager tm = new DataSourceTransactionManager(ds);
    SpringTransactionRunner runner = new SpringTransactionRunner(ds, () -> tm);
    assertThatThrownBy(() -> runner.inTransaction((connection, transaction) -> {
      new TransactionTemplate(tm).executeWithoutResult(nested -> nested.setRollbackOnly());
      return "answered";
    })).isInstanceOfSatisfying(TransactionFailedException.class,
        e -> assertThat(e.stage()).isEqualTo(TransactionFailedException.Stage.ROLLBACK_ONLY));
  }

  /**
   * Regression (PostgreSQL connections terminated under load answered 500): the work failed with a
   * store failure on a connection the server had just closed, Spring's rollback on that connection
   * failed too, and Spring threw the rollback's TransactionSystemException in place of the work's
   * failure, which escaped the filter as a 500. The work's own failure is what the runner reports.
   */
  @Test
  void aRollbackThatFailsAfterTheWorkFailedReportsTheWorksFailureNotTheRollbacks() {
    SQLiteDataSource ds = dataSource(dir.resolve("d.db"));
    DataSourceTransactionManager tm = new DataSourceTransactionManager(ds) {
      @Override
      protected void doRollback(DefaultTransactionStatus status) {
        throw new TransactionSystemException("JDBC rollback failed", new SQLException("This connection has been closed.", "08003"));
      }
    };
    SpringTransactionRunner runner = new SpringTransactionRunner(ds, () -> tm);
    IdemStoreException claimFailed = new IdemStoreException("claim failed: terminating connection due to administrator command", null);

    assertThatThrownBy(() -> runner.inTransaction((connection, transaction) -> {
      throw claimFailed;
    })).isSameAs(claimFailed)
        .satisfies(e -> assertThat(e.getSuppressed()).singleElement().isInstanceOf(TransactionSystemException.class));
  }

  /**
   * Was: under database faults Spring's TransactionTemplate logged "Application exception
   * overridden by rollback exception" at ERROR for every request whose rollback failed (543 lines
   * in one run), beside the filter's own line for the failure it had classified and answered.
   */
  @Test
  @ExtendWith(OutputCaptureExtension.class)
  void aRollbackThatFailsAfterTheWorkFailedIsNotLoggedAtError(CapturedOutput output) {
    SQLiteDataSource ds = dataSource(dir.resolve("e.db"));
    DataSourceTransactionManager tm = new DataSourceTransactionManager(ds) {
      @Override
      protected void doRollback(DefaultTransactionStatus status) {
        throw new TransactionSystemException("JDBC rollback failed", new SQLException("This connection has been closed.", "08003"));
      }
    };
    SpringTransactionRunner runner = new SpringTransactionRunner(ds, () -> tm);
    for (int i = 0; i < 3; i++) {
      assertThatThrownBy(() -> runner.inTransaction((connection, transaction) -> {
        throw new IdemStoreException("claim failed: terminating connection due to administrator command", null);
      })).isInstanceOf(IdemStoreException.class);
    }
    assertThat(output.getAll()).doesNotContain("Application exception overridden by rollback exception").doesNotContain("ERROR");
  }

  @Test
  void theWorkRunsOnTheTransactionsConnectionAndCommits() throws Exception {
    SQLiteDataSource ds = dataSource(dir.resolve("b.db"));
    DataSourceTransactionManager tm = new DataSourceTransactionManager(ds);
    SpringTransactionRunner runner = new SpringTransactionRunner(ds, () -> tm);
    String answer = runner.inTransaction((connection, transaction) -> {
      try (Statement st = connection.createStatement()) {
        st.execute("CREATE TABLE t (x INTEGER)");
        st.execute("INSERT INTO t VALUES (1)");
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
      return "answered";
    });
    assertThat(answer).isEqualTo("answered");
    try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM t")) {
      rs.next();
      assertThat(rs.getInt(1)).isEqualTo(1);
    }
  }

  @Test
  void aTransactionThatCannotBeginIsReportedAsSuchAndTheWorkDoesNotRun() {
    SQLiteDataSource ds = dataSource(dir.resolve("missing").resolve("c.db"));
    SpringTransactionRunner runner = new SpringTransactionRunner(ds, () -> new DataSourceTransactionManager(ds));
    assertThatThrownBy(() -> runner.inTransaction((connection, transaction) -> {
      throw new AssertionError("must not run");
    })).isInstanceOfSatisfying(TransactionFailedException.class,
        e -> assertThat(e.stage()).isEqualTo(TransactionFailedException.Stage.BEGIN));
  }
}
