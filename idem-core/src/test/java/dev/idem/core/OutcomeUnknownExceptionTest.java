package dev.idem.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The one unknown-outcome type: the server's phases as they were, and the HTTP client's. */
class OutcomeUnknownExceptionTest {

  private static final IdempotencyKey KEY = IdempotencyKey.of("k-1");

  @Test
  void theServersPhasesAreStoreExceptionsWithoutClientDetails() {
    OutcomeUnknownException completion = new OutcomeUnknownException(KEY, Duration.ofSeconds(3), null);
    assertThat(completion).isInstanceOf(IdemStoreException.class);
    assertThat(completion.phase()).isEqualTo(OutcomeUnknownException.Phase.COMPLETION);
    assertThat(completion.retryAfter()).isEqualTo(Duration.ofSeconds(3));
    assertThat(completion.attempts()).isZero();
    assertThat(completion.lastStatus()).isEqualTo(-1);
    assertThat(completion.serverRetryAfter()).isEmpty();
    assertThat(completion.serverStatus(Object.class)).isEmpty();
    assertThat(OutcomeUnknownException.thrownByClient(completion)).isFalse();
    assertThat(OutcomeUnknownException.thrownByClient(null)).isFalse();
    assertThat(OutcomeUnknownException.thrownByClient(new IdemStoreException("down", null))).isFalse();
  }

  @Test
  void theClientsPhaseCarriesWhatTheClientSaw() {
    record Status(String state) {}
    Status status = new Status("COMPLETED");
    IllegalStateException last = new IllegalStateException("reset");
    OutcomeUnknownException e = OutcomeUnknownException.clientRetriesExhausted(KEY, 4, 503, "no attempts left", last,
        Duration.ofSeconds(20), status);
    assertThat(e.phase()).isEqualTo(OutcomeUnknownException.Phase.CLIENT_RETRIES_EXHAUSTED);
    assertThat(OutcomeUnknownException.thrownByClient(e)).isTrue();
    assertThat(e.key()).isEqualTo(KEY);
    assertThat(e.attempts()).isEqualTo(4);
    assertThat(e.lastStatus()).isEqualTo(503);
    assertThat(e.serverRetryAfter()).contains(Duration.ofSeconds(20));
    assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(20));
    assertThat(e.serverStatus(Status.class)).containsSame(status);
    assertThat(e.serverStatus(String.class)).isEmpty();
    assertThat(e.getCause()).isSameAs(last);
    assertThat(e.getMessage()).isEqualTo("outcome unknown after 4 attempt(s) with idempotency key 'k-1' (no attempts left,"
        + " last status 503); the effect may exist: resume with the same key");

    OutcomeUnknownException noAnswer = OutcomeUnknownException.clientRetriesExhausted(KEY, 2, -1, "the deadline passed", null,
        null, null);
    assertThat(noAnswer.serverRetryAfter()).isEmpty();
    assertThat(noAnswer.retryAfter()).isEqualTo(Duration.ZERO);
    assertThat(noAnswer.getMessage()).isEqualTo("outcome unknown after 2 attempt(s) with idempotency key 'k-1' (the deadline passed);"
        + " the effect may exist: resume with the same key");
  }

  @Test
  void theClientsPhaseIsMadeOnlyByItsFactory() {
    assertThatThrownBy(() -> new OutcomeUnknownException(KEY, Duration.ofSeconds(1), OutcomeUnknownException.Phase.CLIENT_RETRIES_EXHAUSTED,
        null)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> OutcomeUnknownException.clientRetriesExhausted(KEY, -1, -1, "x", null, null, null))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
