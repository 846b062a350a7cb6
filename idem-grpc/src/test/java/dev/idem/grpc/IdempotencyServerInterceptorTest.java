package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import dev.idem.core.AttemptResult;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.OutcomeUnknownException;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.MetadataUtils;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class IdempotencyServerInterceptorTest {

  private static LeaseIdempotency failFast() {
    return LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
  }

  private static LeaseIdempotency waiting() {
    return LeaseIdempotency.builder(new InMemoryLeaseStore())
        .inProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(10)))
        .build();
  }

  private static IdempotencyServerInterceptor idem(IdempotencyEngine engine) {
    return IdempotencyServerInterceptor.builder(engine).principal("orders").build();
  }

  @Test
  void aRetryOfACompletedCallIsReplayedWithoutRunningTheHandler() throws Exception {
    try (TestService service = new TestService(idem(failFast()))) {
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-1");
      AtomicReference<Metadata> headers = new AtomicReference<>();
      AtomicReference<Metadata> trailers = new AtomicReference<>();
      StringValue first = stub.create(note("buy milk"));
      StringValue again = stub
          .withInterceptors(MetadataUtils.newCaptureMetadataInterceptor(headers, trailers))
          .create(note("buy milk"));

      assertThat(first.getValue()).isEqualTo("note-1");
      assertThat(again).isEqualTo(first);
      assertThat(service.runs).hasValue(1);
      assertThat(headers.get().get(IdempotencyKeys.REPLAYED_HEADER)).isEqualTo("true");
      assertThat(service.keysSeen).containsExactly("k-1", "k-1");
    }
  }

  @Test
  void theSameKeyWithAnotherRequestIsRefusedWithFailedPrecondition() throws Exception {
    try (TestService service = new TestService(idem(failFast()))) {
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-2");
      stub.create(note("buy milk"));

      assertThatThrownBy(() -> stub.create(note("buy bread")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(errorInfo(e).getReason()).isEqualTo("KEY_REUSED");
            assertThat(errorInfo(e).getDomain()).isEqualTo(IdempotencyServerInterceptor.ERROR_DOMAIN);
          });
      assertThat(service.runs).hasValue(1);
    }
  }

  @Test
  void eightConcurrentDuplicatesRunTheHandlerOnceAndAllGetItsAnswer() throws Exception {
    try (TestService service = new TestService(idem(waiting()))) {
      service.handlerDelayMillis = 300;
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-3");
      ExecutorService clients = Executors.newFixedThreadPool(8);
      try {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<StringValue>> answers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
          answers.add(clients.submit(() -> {
            start.await();
            return stub.create(note("buy milk"));
          }));
        }
        start.countDown();
        for (Future<StringValue> answer : answers) {
          assertThat(answer.get(20, TimeUnit.SECONDS).getValue()).isEqualTo("note-1");
        }
      } finally {
        clients.shutdownNow();
      }
      assertThat(service.runs).hasValue(1);
      assertThat(service.keysSeen).hasSize(8);
    }
  }

  @Test
  void aDuplicateWhileTheFirstRunsIsRefusedAsUnavailableWithRetryInfo() throws Exception {
    try (TestService service = new TestService(idem(failFast()))) {
      service.handlerDelayMillis = 500;
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-4");
      ExecutorService client = Executors.newSingleThreadExecutor();
      try {
        Future<StringValue> first = client.submit(() -> stub.create(note("buy milk")));
        awaitRuns(service, 1);

        assertThatThrownBy(() -> stub.create(note("buy milk")))
            .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
              assertThat(errorInfo(e).getReason()).isEqualTo("IN_PROGRESS");
              assertThat(retryInfo(e).getRetryDelay().getSeconds()).isGreaterThanOrEqualTo(1);
            });
        assertThat(first.get(10, TimeUnit.SECONDS).getValue()).isEqualTo("note-1");
      } finally {
        client.shutdownNow();
      }
      assertThat(stub.create(note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
    }
  }

  @Test
  void aHandlerFailureReleasesTheKeySoTheRetryRunsAgain() throws Exception {
    try (TestService service = new TestService(idem(failFast()))) {
      service.failingRuns = 1;
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-5");

      assertThatThrownBy(() -> stub.create(note("buy milk")))
          .isInstanceOfSatisfying(StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL));
      assertThat(stub.create(note("buy milk")).getValue()).isEqualTo("note-2");
      assertThat(stub.create(note("buy milk")).getValue()).isEqualTo("note-2");
      assertThat(service.runs).hasValue(2);
    }
  }

  @Test
  void aHandlerThatThrowsReleasesTheKey() throws Exception {
    try (TestService service = new TestService(idem(failFast()))) {
      service.failingRuns = 1;
      service.failByThrowing = true;
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-6");

      assertThatThrownBy(() -> stub.create(note("buy milk")))
          .isInstanceOfSatisfying(StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN));
      assertThat(stub.create(note("buy milk")).getValue()).isEqualTo("note-2");
      assertThat(service.runs).hasValue(2);
    }
  }

  @Test
  void hedgedCopiesArriveAsConcurrentDuplicatesAndOneEffectResults() throws Exception {
    try (TestService service = new TestService(idem(failFast()), TestService.hedgingPolicy())) {
      service.handlerDelayMillis = 600;

      StringValue answer = service.stub().create(note("buy milk"));

      assertThat(answer.getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      assertThat(service.keysSeen).hasSize(3);
      assertThat(Set.copyOf(service.keysSeen)).hasSize(1);
      assertThat(service.keysSeen.peek()).isNotEqualTo("<none>");
      assertThat(service.previousAttempts).containsExactlyInAnyOrder("0", "1", "2");
    }
  }

  @Test
  void hedgedCopiesWaitingForTheFirstAreReplayed() throws Exception {
    try (TestService service = new TestService(idem(waiting()), TestService.hedgingPolicy())) {
      service.handlerDelayMillis = 600;

      assertThat(service.stub().create(note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      assertThat(service.keysSeen).hasSize(3);
      assertThat(Set.copyOf(service.keysSeen)).hasSize(1);
    }
  }

  @Test
  void aLostResponseIsRetriedByTheChannelAndReplayed() throws Exception {
    try (TestService service = new TestService(idem(failFast()), TestService.retryPolicy(), losesFirstAnswer())) {
      StringValue answer = service.stub().create(note("buy milk"));

      assertThat(answer.getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      assertThat(service.keysSeen).hasSize(2);
      assertThat(Set.copyOf(service.keysSeen)).hasSize(1);
      assertThat(service.previousAttempts).containsExactly("0", "1");
    }
  }

  @Test
  void withoutTheInterceptorALostResponseRunsTheHandlerTwice() throws Exception {
    ServerInterceptor none = new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
          ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        return next.startCall(call, headers);
      }
    };
    try (TestService service = new TestService(none, TestService.retryPolicy(), losesFirstAnswer())) {
      assertThat(service.stub().create(note("buy milk")).getValue()).isEqualTo("note-2");
      assertThat(service.runs).hasValue(2);
    }
  }

  @Test
  void callsWithoutAKeyPassThroughUnlessAKeyIsRequired() throws Exception {
    try (TestService service = new TestService(idem(failFast()), null, stripsKey())) {
      assertThat(service.stub().create(note("a")).getValue()).isEqualTo("note-1");
      assertThat(service.stub().create(note("a")).getValue()).isEqualTo("note-2");
    }
    IdempotencyServerInterceptor required = IdempotencyServerInterceptor.builder(failFast()).keyRequired(true).build();
    try (TestService service = new TestService(required, null, stripsKey())) {
      assertThatThrownBy(() -> service.stub().create(note("a")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(errorInfo(e).getReason()).isEqualTo("KEY_MISSING");
          });
      assertThat(service.runs).hasValue(0);
    }
  }

  @Test
  void anInvalidKeyIsRefusedWithInvalidArgument() throws Exception {
    try (TestService service = new TestService(idem(failFast()), null, replacesKey("k".repeat(256)))) {
      assertThatThrownBy(() -> service.stub().create(note("a")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(errorInfo(e).getReason()).isEqualTo("KEY_INVALID");
          });
      assertThat(service.runs).hasValue(0);
    }
  }

  @Test
  void theKeyCanComeFromARequestField() throws Exception {
    IdempotencyServerInterceptor byField = IdempotencyServerInterceptor.builder(failFast())
        .requestKey(TestService.CREATE, request -> request.getFieldsOrDefault("request_id", Value.getDefaultInstance()).getStringValue())
        .build();
    try (TestService service = new TestService(byField)) {
      Struct request = note("buy milk").toBuilder()
          .putFields("request_id", Value.newBuilder().setStringValue("8e0f1c2a-5b7d-4c3e-9f1a-2b3c4d5e6f70").build())
          .build();
      // each call gets a fresh metadata key from the client interceptor: the field decides
      assertThat(service.stub().create(request).getValue()).isEqualTo("note-1");
      assertThat(service.stub().create(request).getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      // without the field, the metadata key: two calls, two keys, two runs
      service.stub().create(note("x"));
      service.stub().create(note("x"));
      assertThat(service.runs).hasValue(3);
    }
  }

  @Test
  void aStreamingMethodIsNotProtected() throws Exception {
    try (TestService service = new TestService(idem(failFast()))) {
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-7");
      assertThat(stub.watch(note("a"))).hasSize(2);
      assertThat(stub.watch(note("a"))).hasSize(2);
      assertThat(service.watchRuns).hasValue(2);
    }
    assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(failFast()).requestKey(TestService.WATCH, r -> "k"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aStoreFailureAndAnUnknownOutcomeAreUnavailableWithRetryInfo() throws Exception {
    IdempotencyEngine down = (request, effect) -> AttemptResult.storeFailed(new IdemStoreException("store down", null));
    try (TestService service = new TestService(
        IdempotencyServerInterceptor.builder(down).storeRetryDelay(Duration.ofSeconds(2)).build())) {
      assertThatThrownBy(() -> service.stub().create(note("a")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(errorInfo(e).getReason()).isEqualTo("STORE_UNAVAILABLE");
            assertThat(retryInfo(e).getRetryDelay().getSeconds()).isEqualTo(2);
          });
    }
    IdempotencyEngine unknown = (request, effect) -> AttemptResult.outcomeUnknown(
        new OutcomeUnknownException(IdempotencyKey.of("k"), Duration.ofSeconds(3), null));
    try (TestService service = new TestService(idem(unknown))) {
      assertThatThrownBy(() -> service.stub().create(note("a")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(errorInfo(e).getReason()).isEqualTo("OUTCOME_UNKNOWN");
            assertThat(retryInfo(e).getRetryDelay().getSeconds()).isEqualTo(3);
          });
    }
  }

  @Test
  void aDeterministicErrorIsStoredAndReplayedWithItsDetails() throws Exception {
    try (TestService service = new TestService(idem(failFast()))) {
      service.failingRuns = 1;
      service.failWith = com.google.rpc.Status.newBuilder()
          .setCode(Status.Code.NOT_FOUND.value())
          .setMessage("no notebook 7")
          .addDetails(com.google.protobuf.Any.pack(ErrorInfo.newBuilder().setReason("NOTEBOOK_MISSING").setDomain("notes.test").build()))
          .build();
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "k-8");
      for (int i = 0; i < 2; i++) {
        assertThatThrownBy(() -> stub.create(note("a")))
            .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
              assertThat(e.getStatus().getDescription()).isEqualTo("no notebook 7");
              assertThat(errorInfo(e).getReason()).isEqualTo("NOTEBOOK_MISSING");
            });
      }
      assertThat(service.runs).hasValue(1);
    }
  }

  private static void awaitRuns(TestService service, int runs) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (service.runs.get() < runs && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
  }

  /**
   * Outside Idem: the first call's answer is lost after the handler ran: its headers and message
   * never leave, and it closes as UNAVAILABLE (a client that saw response headers would not retry).
   */
  static ServerInterceptor losesFirstAnswer() {
    AtomicBoolean lost = new AtomicBoolean();
    return new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
          ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        if (lost.getAndSet(true)) {
          return next.startCall(call, headers);
        }
        return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
          @Override
          public void sendHeaders(Metadata headers) {
            // dropped
          }

          @Override
          public void sendMessage(RespT message) {
            // dropped
          }

          @Override
          public void close(Status status, Metadata trailers) {
            super.close(Status.UNAVAILABLE.withDescription("connection lost after the answer"), new Metadata());
          }
        }, headers);
      }
    };
  }

  private static ServerInterceptor stripsKey() {
    return new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
          ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        headers.removeAll(IdempotencyKeys.HEADER);
        return next.startCall(call, headers);
      }
    };
  }

  private static ServerInterceptor replacesKey(String key) {
    return new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
          ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        headers.removeAll(IdempotencyKeys.HEADER);
        headers.put(IdempotencyKeys.HEADER, key);
        return next.startCall(call, headers);
      }
    };
  }

  private static ErrorInfo errorInfo(StatusRuntimeException e) {
    return detail(e, ErrorInfo.class);
  }

  private static RetryInfo retryInfo(StatusRuntimeException e) {
    return detail(e, RetryInfo.class);
  }

  private static <T extends com.google.protobuf.Message> T detail(StatusRuntimeException e, Class<T> type) {
    com.google.rpc.Status status = StatusProto.fromThrowable(e);
    assertThat(status).as("google.rpc.Status details").isNotNull();
    for (com.google.protobuf.Any any : status.getDetailsList()) {
      if (any.is(type)) {
        try {
          return any.unpack(type);
        } catch (InvalidProtocolBufferException ex) {
          throw new AssertionError(ex);
        }
      }
    }
    throw new AssertionError("no " + type.getSimpleName() + " in " + status);
  }
}
