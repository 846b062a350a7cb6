package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.idem.grpc.IdempotencyServerInterceptor;
import io.grpc.BindableService;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A Spring Boot application with Spring gRPC (Spring Boot 4.1's own gRPC server; Spring gRPC 0.12
 * on Spring Boot 3.5) and the starter, with only {@code idem.principal} set: the starter registers
 * Idem's server interceptor for every service, and a unary create whose handler writes through the
 * {@code JdbcTemplate} bean runs once per key in transactional mode. A retry after a lost answer is
 * replayed, concurrent copies (as hedging sends them) make one row, a reused key is refused, a
 * streaming method passes through.
 */
@SpringBootTest(classes = SpringGrpcTest.App.class)
class SpringGrpcTest {

  static final Path DIR = TransactionalFilterModeTest.tempDir();
  static final String SERVER = "idem-spring-grpc-" + UUID.randomUUID();
  static final String SERVICE = "idem.test.Notes";

  static final MethodDescriptor<Struct, StringValue> CREATE = MethodDescriptor.<Struct, StringValue>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Create"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .build();

  static final MethodDescriptor<Struct, StringValue> WATCH = MethodDescriptor.<Struct, StringValue>newBuilder()
      .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Watch"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .build();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("idem.principal", () -> "shared");
    r.add("spring.grpc.server.inprocess.name", () -> SERVER);
    r.add("spring.grpc.server.inprocess.exclusive", () -> "true"); // Spring gRPC 0.x: no Netty server beside it
    r.add("spring.grpc.server.port", () -> "0");
  }

  /** The notes service: writes a row through the application's JdbcTemplate, answers its id. */
  static class Notes implements BindableService {
    private final JdbcTemplate jdbc;

    Notes(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL)");
    }

    @Override
    public ServerServiceDefinition bindService() {
      return ServerServiceDefinition.builder(SERVICE)
          .addMethod(CREATE, ServerCalls.asyncUnaryCall((request, observer) -> {
            jdbc.update("INSERT INTO notes(text) VALUES (?)", request.getFieldsOrThrow("text").getStringValue());
            sleep(50); // long enough for concurrent copies to meet
            Long id = jdbc.queryForObject("SELECT MAX(id) FROM notes", Long.class);
            observer.onNext(StringValue.of("note-" + id));
            observer.onCompleted();
          }))
          .addMethod(WATCH, ServerCalls.asyncServerStreamingCall((request, observer) -> {
            observer.onNext(StringValue.of("a"));
            observer.onNext(StringValue.of("b"));
            observer.onCompleted();
          }))
          .build();
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @AppWithoutSecurity
  static class App {
    @Bean
    Notes notes(JdbcTemplate jdbc) {
      return new Notes(jdbc);
    }
  }

  @Autowired JdbcTemplate jdbc;
  @Autowired IdempotencyServerInterceptor interceptor;

  private ManagedChannel channel;

  @BeforeEach
  void channel() {
    channel = InProcessChannelBuilder.forName(SERVER).directExecutor().build();
  }

  @AfterEach
  void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private StringValue create(String key, String text) {
    Metadata headers = new Metadata();
    headers.put(Metadata.Key.of("idempotency-key", Metadata.ASCII_STRING_MARSHALLER), key);
    return ClientCalls.blockingUnaryCall(
        io.grpc.ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers)), CREATE,
        CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
        Struct.newBuilder().putFields("text", Value.newBuilder().setStringValue(text).build()).build());
  }

  private int rows(String text) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE text = ?", Integer.class, text);
  }

  @Test
  void aRetryWithTheSameKeyGetsTheFirstAnswerAndMakesNoSecondRow() {
    String key = UUID.randomUUID().toString();
    StringValue first = create(key, "buy milk");
    StringValue retry = create(key, "buy milk");
    assertThat(retry).isEqualTo(first);
    assertThat(rows("buy milk")).isEqualTo(1);
  }

  @Test
  void concurrentCopiesOfOneCallMakeOneRow() throws Exception {
    String key = UUID.randomUUID().toString();
    int n = 6;
    CyclicBarrier barrier = new CyclicBarrier(n);
    ExecutorService pool = Executors.newFixedThreadPool(n);
    List<String> answers = new ArrayList<>();
    try {
      List<Future<String>> calls = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        calls.add(pool.submit(() -> {
          barrier.await();
          try {
            return create(key, "water plants").getValue();
          } catch (StatusRuntimeException e) {
            return e.getStatus().getCode().name();
          }
        }));
      }
      for (Future<String> f : calls) {
        answers.add(f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(rows("water plants")).isEqualTo(1);
    assertThat(answers).allSatisfy(a -> assertThat(a).matches("note-\\d+|UNAVAILABLE"));
    assertThat(answers.stream().filter(a -> a.startsWith("note-")).distinct()).hasSize(1);
  }

  @Test
  void aKeyReusedWithAnotherRequestIsRefusedAndWritesNothing() {
    String key = UUID.randomUUID().toString();
    create(key, "buy bread");
    StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () -> create(key, "buy butter"));
    assertThat(refused).isNotNull();
    assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(rows("buy butter")).isZero();
  }

  @Test
  void theStreamingMethodPassesThroughAndIsListedAsUnprotected() {
    List<String> got = new ArrayList<>();
    ClientCalls.blockingServerStreamingCall(channel, WATCH, CallOptions.DEFAULT, Struct.getDefaultInstance())
        .forEachRemaining(v -> got.add(v.getValue()));
    assertThat(got).containsExactly("a", "b");
    assertThat(interceptor.unprotectedStreamingMethods()).containsExactly(SERVICE + "/Watch (SERVER_STREAMING)");
  }
}
