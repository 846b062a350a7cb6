package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AttemptResult;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.OutcomeUnknownException;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/** What the transactional engine reports when something fails after the effect answered. */
class TransactionalIdempotencyFailureTest {
  private static final IdempotencyKey KEY = IdempotencyKey.of("k-1");


  private static TransactionFailedException atCommit(SQLException cause) {
    return new TransactionFailedException(TransactionFailedException.Stage.COMMIT, "the commit failed", cause);
  }

  /**
   * Regression: when the COMMIT's acknowledgement was lost, the answer said nothing was written
   * although it may have been (94 of 320 such answers in a proxy run were for committed writes).
   */
  @Test
  void aCommitWhoseAcknowledgementIsLostIsAnUnknownOutcomeNotARollback() {
    AttemptResult lost = AttemptFailures.afterAnswer(
        atCommit(new SQLException("An I/O error occurred while sending to the backend", "08006")), true, KEY);
    assertThat(lost.kind()).isEqualTo(AttemptResult.Kind.OUTCOME_UNKNOWN);
    assertThat(lost.failure().orElseThrow()).isInstanceOfSatisfying(OutcomeUnknownException.class,
        unknown -> assertThat(unknown.phase()).isEqualTo(OutcomeUnknownException.Phase.COMMIT));
    AttemptResult unclassified = AttemptFailures.afterAnswer(atCommit(new SQLException("no state")), true, KEY);
    assertThat(unclassified.kind()).as("an unexplained commit failure may have committed").isEqualTo(AttemptResult.Kind.OUTCOME_UNKNOWN);
  }

  @Test
  void aDeadlockAtTheCommitIsARollbackThatARetryCanGetPast() {
    AttemptResult deadlock = AttemptFailures.afterAnswer(atCommit(new SQLException("could not serialize", "40001")), true, KEY);
    assertThat(deadlock.kind()).isEqualTo(AttemptResult.Kind.ROLLED_BACK);
  }

  @Test
  void dataTheDatabaseRefusesAtTheCommitIsTheRequestsFailureNotAnOutage() {
    AttemptResult refused = AttemptFailures.afterAnswer(
        atCommit(new SQLException("violates foreign key constraint", "23503")), true, KEY);
    assertThat(refused.kind()).isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
  }

  @Test
  void aSuccessAnsweredInAnAbortedTransactionOrARollbackOnlyOneIsTheRequestsFailure() {
    AttemptResult aborted = AttemptFailures.afterAnswer(new EffectFailedException(new SQLException("aborted", "25P02")), false, KEY);
    assertThat(aborted.kind()).isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
    AttemptResult rollbackOnly = AttemptFailures.afterAnswer(
        new TransactionFailedException(TransactionFailedException.Stage.ROLLBACK_ONLY, "rollback-only", null), true, KEY);
    assertThat(rollbackOnly.kind()).isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
  }

  @Test
  void aFailureOfIdemsOwnStatementBeforeTheCommitIsATransientRollback() {
    AttemptResult store = AttemptFailures.afterAnswer(
        new IdemStoreException("storing the response failed", new SQLException("refused", "23514")), false, KEY);
    assertThat(store.kind()).isEqualTo(AttemptResult.Kind.ROLLED_BACK);
  }
}
