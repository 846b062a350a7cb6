package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.LeaseIdempotency;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class IdempotencyClientInterceptorTest {

  private static IdempotencyServerInterceptor idem() {
    return IdempotencyServerInterceptor.builder(LeaseIdempotency.builder(new InMemoryLeaseStore()).build()).build();
  }

  @Test
  void eachCallGetsAFreshKeyUnlessTheCallerGivesOne() throws Exception {
    try (TestService service = new TestService(idem())) {
      service.stub().create(note("a"));
      service.stub().create(note("a"));
      String key = IdempotencyKeys.newKey();
      TestService.Stub keyed = IdempotencyKeys.withKey(service.stub(), key);
      keyed.create(note("a"));
      keyed.create(note("a"));

      List<String> keys = List.copyOf(service.keysSeen);
      assertThat(keys).hasSize(4);
      assertThat(keys.get(0)).hasSize(36).isNotEqualTo(keys.get(1));
      assertThat(keys.subList(2, 4)).containsOnly(key);
      assertThat(service.runs).hasValue(3);
    }
  }

  @Test
  void everyAttemptOfTheChannelsRetryPolicyCarriesTheSameKey() throws Exception {
    // the server answers UNAVAILABLE three times: the channel retries with the headers it started with
    io.grpc.ServerInterceptor unavailable = new io.grpc.ServerInterceptor() {
      @Override
      public <ReqT, RespT> io.grpc.ServerCall.Listener<ReqT> interceptCall(
          io.grpc.ServerCall<ReqT, RespT> call, io.grpc.Metadata headers, io.grpc.ServerCallHandler<ReqT, RespT> next) {
        call.close(io.grpc.Status.UNAVAILABLE, new io.grpc.Metadata());
        return new io.grpc.ServerCall.Listener<>() {};
      }
    };
    try (TestService service = new TestService(idem(), TestService.retryPolicy(), unavailable)) {
      assertThatThrownBy(() -> service.stub().create(note("a"))).isInstanceOf(io.grpc.StatusRuntimeException.class);
      assertThat(service.keysSeen).hasSize(3);
      assertThat(Set.copyOf(service.keysSeen)).hasSize(1);
      assertThat(service.previousAttempts).containsExactly("0", "1", "2");
    }
  }

  @Test
  void anInvalidKeyIsRefusedBeforeTheCall() throws Exception {
    try (TestService service = new TestService(idem())) {
      assertThatThrownBy(() -> IdempotencyKeys.withKey(service.stub(), ""))
          .isInstanceOf(InvalidIdempotencyKeyException.class);
    }
  }
}
