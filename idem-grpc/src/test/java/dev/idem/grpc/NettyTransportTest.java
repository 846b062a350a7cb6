package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.stub.MetadataUtils;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The interceptors on a real transport: a Netty server on 127.0.0.1 and a Netty channel to it
 * (grpc-netty-shaded, HTTP/2 over TCP), with the channel's own hedging and retry policies from its
 * service config.
 */
class NettyTransportTest {

  private static IdempotencyServerInterceptor idem(LeaseIdempotency engine) {
    return IdempotencyServerInterceptor.builder(engine).principal("orders").build();
  }

  private static LeaseIdempotency failFast() {
    return LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
  }

  private static LeaseIdempotency waiting() {
    return LeaseIdempotency.builder(new InMemoryLeaseStore())
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(10)))
        .build();
  }

  @Test
  void hedgedCopiesOfASlowCallGiveOneEffect() throws Exception {
    try (TestService service = new TestService(TestService.Transport.NETTY, idem(failFast()), TestService.hedgingPolicy())) {
      service.handlerDelayMillis = 600;

      StringValue answer = service.stub().create(note("buy milk"));

      assertThat(answer.getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      // three copies reached the server, all with the call's one key; the later ones were refused IN_PROGRESS
      assertThat(service.keysSeen).hasSize(3);
      assertThat(Set.copyOf(service.keysSeen)).hasSize(1);
      assertThat(service.keysSeen.peek()).isNotEqualTo("<none>");
      assertThat(service.previousAttempts).containsExactlyInAnyOrder("0", "1", "2");
    }
  }

  @Test
  void hedgedCopiesThatWaitForTheFirstAreReplayedWithOneEffect() throws Exception {
    try (TestService service = new TestService(TestService.Transport.NETTY, idem(waiting()), TestService.hedgingPolicy())) {
      service.handlerDelayMillis = 600;

      assertThat(service.stub().create(note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      assertThat(service.keysSeen).hasSize(3);
      assertThat(Set.copyOf(service.keysSeen)).hasSize(1);
    }
  }

  @Test
  void aLostAnswerIsRetriedByTheChannelsRetryPolicyAndReplayed() throws Exception {
    try (TestService service = new TestService(TestService.Transport.NETTY, idem(failFast()), TestService.retryPolicy(),
        IdempotencyServerInterceptorTest.losesFirstAnswer())) {
      AtomicReference<Metadata> headers = new AtomicReference<>();
      AtomicReference<Metadata> trailers = new AtomicReference<>();

      StringValue answer = service.stub()
          .withInterceptors(MetadataUtils.newCaptureMetadataInterceptor(headers, trailers))
          .create(note("buy milk"));

      assertThat(answer.getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      assertThat(headers.get().get(IdempotencyKeys.REPLAYED_HEADER)).isEqualTo("true");
      assertThat(service.keysSeen).hasSize(2);
      assertThat(Set.copyOf(service.keysSeen)).hasSize(1);
      assertThat(service.previousAttempts).containsExactly("0", "1");
    }
  }

  @Test
  void withoutIdemTheSameLostAnswerRunsTheHandlerTwice() throws Exception {
    ServerInterceptor none = new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
          ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        return next.startCall(call, headers);
      }
    };
    try (TestService service = new TestService(TestService.Transport.NETTY, none, TestService.retryPolicy(),
        IdempotencyServerInterceptorTest.losesFirstAnswer())) {
      assertThat(service.stub().create(note("buy milk")).getValue()).isEqualTo("note-2");
      assertThat(service.runs).hasValue(2);
    }
  }

  @Test
  void eightConcurrentDuplicatesOnOneConnectionRunTheHandlerOnce() throws Exception {
    try (TestService service = new TestService(TestService.Transport.NETTY, idem(waiting()), null)) {
      service.handlerDelayMillis = 300;
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "n-1");
      ExecutorService clients = Executors.newFixedThreadPool(8);
      try {
        CyclicBarrier start = new CyclicBarrier(8);
        List<Future<StringValue>> answers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
          answers.add(clients.submit(() -> {
            start.await(10, TimeUnit.SECONDS);
            return stub.create(note("buy milk"));
          }));
        }
        for (Future<StringValue> answer : answers) {
          assertThat(answer.get(20, TimeUnit.SECONDS).getValue()).isEqualTo("note-1");
        }
      } finally {
        clients.shutdownNow();
      }
      assertThat(service.runs).hasValue(1);
      assertThat(service.keysSeen).hasSize(8).containsOnly("n-1");
    }
  }
}
