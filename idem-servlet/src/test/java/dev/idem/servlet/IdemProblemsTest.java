package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The one mapping from what an engine said to Idem's answer: the filter maps results, the starter's
 * exception resolver maps the exceptions the same events raise, and both must give the same problem
 * (issue: the mapping was written twice, with texts that had drifted apart).
 */
class IdemProblemsTest {

  private static final IdempotencyKey KEY = IdempotencyKey.of("k-1");

  private final IdemProblems problems = IdempotencyFilterConfig.builder(new InMemoryLeaseStore()).maxRetryAfter(Duration.ofSeconds(30)).build().problems();

  /** Results whose exception carries the same meaning: each pair must answer the same problem. */
  private static List<AttemptResult> resultsWithTheirExceptions() {
    return List.of(
        AttemptResult.keyReused(new IdempotencyKeyReusedException(KEY, null)),
        AttemptResult.inProgress(new RequestInProgressException(KEY, Duration.ofSeconds(7))),
        AttemptResult.outcomeUnknown(new OutcomeUnknownException(KEY, Duration.ofSeconds(3), null)),
        AttemptResult.storeFailed(new StoredResponseUnreadableException("tampered", null)));
  }

  /** Was: "retry after 1 seconds". */
  @Test
  void aRetryAfterOfOneSecondIsWrittenInTheSingular() {
    assertThat(problems.inProgress(1).detail()).endsWith("retry after 1 second").doesNotContain("1 seconds");
    assertThat(problems.inProgress(2).detail()).endsWith("retry after 2 seconds");
    for (OutcomeUnknownException.Phase phase : OutcomeUnknownException.Phase.values()) {
      assertThat(problems.outcomeUnknown(1, phase).detail()).doesNotContain("1 seconds");
    }
  }

  /**
   * Was: the 503 of an {@code @Idempotent} method's store failure said "whether the operation ran is
   * not known", while docs/http.md says nothing ran and nothing was kept; an unknown outcome is
   * {@code outcome-unknown}, never {@code store-unavailable}.
   */
  @Test
  void aStoreFailureSaysTheRequestWasNotProcessedNeverThatItsOutcomeIsUnknown() {
    for (IdemProblem p : List.of(problems.storeFailed(), problems.storeUnavailable(), problems.notCommitted())) {
      assertThat(p.status()).isEqualTo(503);
      assertThat(p.detail()).contains("not processed").doesNotContain("not known").doesNotContain("unknown");
    }
  }

  @Test
  void theFilterAndTheExceptionResolverAnswerTheSameEventWithTheSameProblem() {
    for (AttemptResult result : resultsWithTheirExceptions()) {
      IdemProblems.Answer fromResult = problems.forResult(result);
      IdemProblems.Answer fromException = problems.forException(result.failure().orElseThrow()).orElseThrow();
      assertThat(fromException).as(result.kind().name()).isEqualTo(fromResult);
    }
  }

  @Test
  void everyResultThatIsNotAnAnswerHasAProblemAndEveryAnswerHasNone() {
    Set<AttemptResult.Kind> answers = EnumSet.of(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.RELEASED, AttemptResult.Kind.REPLAYED);
    List<AttemptResult> failures = List.of(
        AttemptResult.keyReused(new IdempotencyKeyReusedException(KEY, null)),
        AttemptResult.inProgress(new RequestInProgressException(KEY, Duration.ofSeconds(1))),
        AttemptResult.outcomeUnknown(new OutcomeUnknownException(KEY, Duration.ofSeconds(1), null)),
        AttemptResult.outcomeUnknown(new OutcomeUnknownException(KEY, Duration.ofSeconds(1), OutcomeUnknownException.Phase.COMMIT, null)),
        AttemptResult.rolledBack(new IdemStoreException("rolled back", null), true),
        AttemptResult.rolledBack(new IdemStoreException("refused", null), false),
        AttemptResult.storeFailed(new StoredResponseUnreadableException("tampered", null)),
        AttemptResult.storeFailed(new IdemStoreException("down", null)));
    Set<AttemptResult.Kind> mapped = EnumSet.noneOf(AttemptResult.Kind.class);
    for (AttemptResult result : failures) {
      IdemProblem problem = problems.forResult(result).problem();
      mapped.add(result.kind());
      assertThat(problem.status()).as(result.kind().name()).isBetween(400, 599);
      assertThat(problem.type()).as(result.kind().name()).startsWith(IdempotencyFilter.PROBLEM_TYPE_BASE);
    }
    assertThat(EnumSet.complementOf(EnumSet.copyOf(answers))).isEqualTo(mapped);
    AttemptResult executed = AttemptResult.of(Outcome.executed(StoredResponse.builder(201).build()));
    assertThatThrownBy(() -> problems.forResult(executed)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void statusesFollowTheDraftAndRetryAfterComesWithTheAnswersThatMayBeRetried() {
    assertThat(problems.forResult(AttemptResult.keyReused(new IdempotencyKeyReusedException(KEY, null))).problem().status())
        .isEqualTo(422);
    IdemProblems.Answer busy = problems.forResult(AttemptResult.inProgress(new RequestInProgressException(KEY, Duration.ofSeconds(7))));
    assertThat(busy.problem().status()).isEqualTo(409);
    assertThat(busy.retryAfterSeconds()).hasValue(7);
    IdemProblems.Answer unknown = problems.forResult(AttemptResult.outcomeUnknown(new OutcomeUnknownException(KEY, Duration.ofSeconds(1), OutcomeUnknownException.Phase.COMMIT, null)));
    assertThat(unknown.problem().name()).isEqualTo(IdemProblems.OUTCOME_UNKNOWN);
    assertThat(unknown.retryAfterSeconds()).hasValue(1);
    assertThat(problems.forResult(AttemptResult.rolledBack(new IdemStoreException("refused", null), false)).problem().status())
        .isEqualTo(500); // the request's own failure: "retry later" would fail the same way
    assertThat(problems.forResult(AttemptResult.storeFailed(new IdemStoreException("down", null))).retryAfterSeconds()).isEmpty();
  }

  @Test
  void anExceptionThatIsNotIdemsIsLeftToTheApplication() {
    assertThat(problems.forException(new IllegalStateException("the application's own"))).isEmpty();
    assertThat(problems.forException(new ResponseNotStoredException(KEY, StoredResponse.builder(201).bodyNotStored(70_000).build())).orElseThrow().problem().extensions())
        .containsEntry("originalStatus", 201);
  }

  /**
   * One {@code OutcomeUnknownException} for the server and the HTTP client: the client's phase,
   * escaping application code that called another service, is the application's own exception, as
   * it was when the client had a type of its own; the server's phases keep their answers.
   */
  @Test
  void aClientsUnknownOutcomeIsLeftToTheApplicationAndTheServersIsOutcomeUnknown() {
    OutcomeUnknownException client = OutcomeUnknownException.clientRetriesExhausted(KEY, 3, 503, "no attempts left", null,
        Duration.ofSeconds(9), null);
    assertThat(problems.forException(client)).isEmpty();
    assertThat(problems.forException(new OutcomeUnknownException(KEY, Duration.ofSeconds(4), null)).orElseThrow())
        .satisfies(a -> {
          assertThat(a.problem().name()).isEqualTo(IdemProblems.OUTCOME_UNKNOWN);
          assertThat(a.retryAfterSeconds()).hasValue(4);
        });
    assertThat(problems.forException(new IdemStoreException("down", null)).orElseThrow().problem().name())
        .isEqualTo(IdemProblems.STORE_UNAVAILABLE);
  }
}
