package dev.idem.examples.notes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.LeaseContext;
import dev.idem.core.Scope;
import dev.idem.servlet.IdempotencyFilter;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.mock.web.MockHttpServletRequest;

/**
 * What the notes service says when its database fails: never that nothing was written when the
 * write may have committed.
 */
class NotesControllerFailureAnswersTest {

  private final NotesController controller = new NotesController(null);

  private static MockHttpServletRequest leaseModePost() {
    MockHttpServletRequest request = new MockHttpServletRequest("POST", "/notes");
    request.setAttribute(IdempotencyFilter.LEASE_CONTEXT_ATTRIBUTE,
        new LeaseContext(Scope.of("anonymous", "POST /notes"), IdempotencyKey.of("k-1"), "owner-1", false));
    return request;
  }

  /**
   * Was: in lease mode, an INSERT that reached the database but whose acknowledgement was lost was
   * answered "503 Database unavailable", which the README said meant nothing was written; the note
   * existed, and the retry with the same key returned it.
   */
  @Test
  void aConnectionBrokenDuringTheInsertIsAnUnknownOutcomeNotDatabaseUnavailable() {
    ResponseEntity<ProblemDetail> answer = controller.databaseFailed(
        new DataAccessResourceFailureException("insert failed", new SQLException("An I/O error occurred while sending to the backend.", "08006")),
        leaseModePost());
    assertThat(answer.getStatusCode().value()).isEqualTo(503);
    assertThat(answer.getBody().getTitle()).isEqualTo("Outcome of the request is unknown");
    assertThat(answer.getBody().getDetail()).contains("whether it was saved is not known").contains("same Idempotency-Key");
  }

  @Test
  void failuresWhereTheDatabaseUndidTheStatementOrNoConnectionWasHadSayNothingWasCarriedOut() {
    ResponseEntity<ProblemDetail> lock = controller.databaseFailed(
        new PessimisticLockingFailureException("lock", new SQLException("canceling statement due to lock timeout", "55P03")), leaseModePost());
    assertThat(lock.getBody().getTitle()).isEqualTo("Database unavailable");
    assertThat(lock.getBody().getDetail()).contains("was not carried out");
    ResponseEntity<ProblemDetail> noConnection = controller.databaseFailed(
        new CannotGetJdbcConnectionException("no connection", new SQLTransientConnectionException("pool timed out", "08001")),
        leaseModePost());
    assertThat(noConnection.getBody().getTitle()).isEqualTo("Database unavailable");
  }

  /** Transactional mode: the write is in Idem's transaction, which a broken connection never commits. */
  @Test
  void inTransactionalModeABrokenConnectionCommittedNothing() {
    ResponseEntity<ProblemDetail> answer = controller.databaseFailed(
        new DataAccessResourceFailureException("insert failed", new SQLException("An I/O error occurred", "08006")),
        new MockHttpServletRequest("POST", "/notes"));
    assertThat(answer.getBody().getTitle()).isEqualTo("Database unavailable");
  }
}
