package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import io.grpc.BindableService;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCalls;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Streaming methods are not protected: the interceptor built with the services it serves lists
 * (and logs) the ones it leaves unprotected, and refuses one configured as protected.
 */
class StreamingMethodsTest {

  static final MethodDescriptor<Struct, StringValue> CHAT = MethodDescriptor.<Struct, StringValue>newBuilder()
      .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(TestService.SERVICE, "Chat"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .build();

  /** A unary method the test service does not serve: protecting only it leaves Create unprotected. */
  static final MethodDescriptor<Struct, StringValue> ARCHIVE = TestService.CREATE.toBuilder()
      .setFullMethodName(MethodDescriptor.generateFullMethodName(TestService.SERVICE, "Archive"))
      .build();

  private final Logger jul = Logger.getLogger(IdempotencyServerInterceptor.class.getName());
  private final List<LogRecord> logged = new CopyOnWriteArrayList<>();
  private final Handler handler = new Handler() {
    @Override
    public void publish(LogRecord record) {
      logged.add(record);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void listen() {
    jul.addHandler(handler);
  }

  @AfterEach
  void stopListening() {
    jul.removeHandler(handler);
  }

  private static LeaseIdempotency engine() {
    return LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
  }

  /** Create (unary), Watch (server streaming) and Chat (bidirectional streaming). */
  static ServerServiceDefinition notes() {
    return ServerServiceDefinition.builder(TestService.SERVICE)
        .addMethod(TestService.CREATE, ServerCalls.asyncUnaryCall((request, observer) -> {
          observer.onNext(StringValue.of("note"));
          observer.onCompleted();
        }))
        .addMethod(TestService.WATCH, ServerCalls.asyncServerStreamingCall((request, observer) -> observer.onCompleted()))
        .addMethod(CHAT, ServerCalls.asyncBidiStreamingCall(observer -> new io.grpc.stub.StreamObserver<Struct>() {
          @Override
          public void onNext(Struct value) {}

          @Override
          public void onError(Throwable t) {}

          @Override
          public void onCompleted() {
            observer.onCompleted();
          }
        }))
        .build();
  }

  @Test
  void theStreamingMethodsOfTheServicesGivenAreListedAndLoggedAtBuild() {
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(engine()).services(notes()).build();

    assertThat(idem.unprotectedStreamingMethods()).containsExactly(
        "idem.test.Notes/Chat (BIDI_STREAMING)", "idem.test.Notes/Watch (SERVER_STREAMING)");
    assertThat(logged).singleElement().satisfies(record -> {
      assertThat(record.getLevel()).isEqualTo(Level.INFO);
      assertThat(record.getMessage())
          .contains("2 streaming method(s) pass through unprotected")
          .contains("idem.test.Notes/Chat (BIDI_STREAMING), idem.test.Notes/Watch (SERVER_STREAMING)")
          .doesNotContain("Create");
    });
  }

  @Test
  void bindableServicesAreBoundAndListedTheSameWay() {
    BindableService generated = StreamingMethodsTest::notes;
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(engine()).bindableServices(generated).build();

    assertThat(idem.unprotectedStreamingMethods()).hasSize(2);
  }

  @Test
  void withoutStreamingMethodsOrWithoutServicesNothingIsLogged() {
    ServerServiceDefinition unaryOnly = ServerServiceDefinition.builder(TestService.SERVICE)
        .addMethod(TestService.CREATE, ServerCalls.asyncUnaryCall((request, observer) -> observer.onCompleted()))
        .build();

    assertThat(IdempotencyServerInterceptor.builder(engine()).services(unaryOnly).build().unprotectedStreamingMethods()).isEmpty();
    assertThat(IdempotencyServerInterceptor.builder(engine()).build().unprotectedStreamingMethods()).isEmpty();
    assertThat(logged).isEmpty();
  }

  @Test
  void aStreamingMethodConfiguredAsProtectedIsRefusedNamingItAndWhatIsSupported() {
    assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(engine()).protect(TestService.CREATE, TestService.WATCH))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("idem.test.Notes/Watch is a SERVER_STREAMING method and cannot be protected (protect(...))")
        .hasMessageContaining("protects unary methods only, in lease or transactional mode");
    assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(engine()).requestKey(CHAT, request -> "k"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("idem.test.Notes/Chat is a BIDI_STREAMING method and cannot be protected (requestKey(...))");
  }

  @Test
  void aMethodConfiguredAsUnaryThatAServiceServesAsStreamingIsRefusedAtBuild() {
    // a descriptor from an older stub: unary, while the service now streams under the same name
    MethodDescriptor<Struct, StringValue> staleWatch = TestService.CREATE.toBuilder()
        .setFullMethodName(TestService.WATCH.getFullMethodName())
        .build();
    IdempotencyServerInterceptor.Builder builder = IdempotencyServerInterceptor.builder(engine())
        .protect(staleWatch)
        .services(notes());

    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("idem.test.Notes/Watch is a SERVER_STREAMING method and cannot be protected (the configuration)");
  }

  @Test
  void protectLimitsProtectionToTheMethodsItNames() throws Exception {
    IdempotencyServerInterceptor onlyArchive = IdempotencyServerInterceptor.builder(engine()).protect(ARCHIVE).build();
    try (TestService service = new TestService(onlyArchive)) {
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "p-1");
      stub.create(note("a"));
      stub.create(note("a"));
      assertThat(service.runs).as("Create is not among the protected methods").hasValue(2);
    }
    IdempotencyServerInterceptor onlyCreate = IdempotencyServerInterceptor.builder(engine()).protect(TestService.CREATE).build();
    try (TestService service = new TestService(onlyCreate)) {
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "p-2");
      stub.create(note("a"));
      stub.create(note("a"));
      assertThat(service.runs).hasValue(1);
    }
    IdempotencyServerInterceptor archiveAndKeyedCreate = IdempotencyServerInterceptor.builder(engine())
        .protect(ARCHIVE)
        .requestKey(TestService.CREATE, request -> request.getFieldsOrThrow("text").getStringValue())
        .build();
    try (TestService service = new TestService(archiveAndKeyedCreate)) {
      service.stub().create(note("k-from-the-request"));
      service.stub().create(note("k-from-the-request"));
      assertThat(service.runs).as("a method given a request key is protected too").hasValue(1);
    }
  }

  @Test
  void streamingCallsPassThroughAnInterceptorBuiltWithItsServices() throws Exception {
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(engine()).services(notes()).build();
    try (TestService service = new TestService(idem)) {
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "s-1");
      assertThat(stub.watch(note("a"))).hasSize(2);
      assertThat(stub.watch(note("a"))).hasSize(2);
      assertThat(service.watchRuns).hasValue(2);
    }
  }
}
