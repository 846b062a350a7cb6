package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.spring.observation.ObservationIdemListener;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The observation of an attempt ({@link ObservationIdemListener}) never stays current on the
 * attempt's thread once the attempt is over: not when the listener it wraps throws, not when the
 * effect throws an {@link Error}, not when attempts nest.
 */
class ObservationScopeTest {

  private final List<Observation.Context> stopped = new ArrayList<>();
  private final ObservationRegistry registry = ObservationsTest.recording(stopped);

  private static IdempotentRequest request(String operation, String key) {
    return new IdempotentRequest(Scope.of("p", operation), IdempotencyKey.of(key),
        Fingerprint.of("text/plain", "x".getBytes(StandardCharsets.UTF_8)));
  }

  private static StoredResponse ok() {
    return StoredResponse.of(200, "ok");
  }

  @Test
  void aWrappedListenerWhoseStartedThrowsLeavesNoObservationCurrentOrOpen() {
    IdemListener throwing = new IdemListener() {
      @Override
      public Attempt started(IdempotentRequest request, String mode) {
        throw new IllegalStateException("listener broke");
      }
    };
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore())
        .listener(new ObservationIdemListener(registry, throwing)).build();
    AttemptResult result = engine.attempt(request("op", "k-1"), ctx -> ok());
    assertThat(result.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(registry.getCurrentObservation()).isNull();
    assertThat(stopped).hasSize(1);
  }

  @Test
  void anEffectThatThrowsAnErrorEndsItsObservation() {
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore())
        .listener(new ObservationIdemListener(registry, IdemListener.NONE)).build();
    assertThatThrownBy(() -> engine.attempt(request("op", "k-2"), ctx -> {
      throw new AssertionError("effect broke");
    })).isInstanceOf(AssertionError.class);
    assertThat(registry.getCurrentObservation()).isNull();
    assertThat(stopped).singleElement().satisfies(c -> assertThat(c.getError()).hasMessage("effect broke"));
  }

  @Test
  void nestedAttemptsAreParentAndChildAndLeaveNothingCurrent() {
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore())
        .listener(new ObservationIdemListener(registry, IdemListener.NONE)).build();
    List<Observation> seen = new ArrayList<>();
    engine.attempt(request("outer", "k-3"), ctx -> {
      seen.add(registry.getCurrentObservation());
      engine.attempt(request("inner", "k-4"), inner -> {
        seen.add(registry.getCurrentObservation());
        return ok();
      });
      seen.add(registry.getCurrentObservation());
      return ok();
    });
    assertThat(registry.getCurrentObservation()).isNull();
    assertThat(stopped).extracting(Observation.Context::getContextualName).containsExactly("idem inner", "idem outer");
    assertThat(stopped.get(0).getParentObservation()).isSameAs(seen.get(0));
    assertThat(seen.get(2)).isSameAs(seen.get(0));
  }
}
