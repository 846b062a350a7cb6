package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
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
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * gRPC methods with policies of their own ({@code idem.grpc.methods.*}) in a Spring gRPC
 * application: {@code Create} writes through the {@code JdbcTemplate} in transactional mode and
 * requires a key; {@code Charge} calls another system in lease mode with its keys in memory, outside
 * any transaction, and lets a call without a key through. Policies that cannot hold stop the
 * start-up, naming their entry.
 */
@SpringBootTest(classes = GrpcMethodPoliciesTest.App.class)
class GrpcMethodPoliciesTest {

  static final Path DIR = TransactionalFilterModeTest.tempDir();
  static final String SERVER = "idem-grpc-policies-" + UUID.randomUUID();

  static final MethodDescriptor<Struct, StringValue> CHARGE = MethodDescriptor.<Struct, StringValue>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(SpringGrpcTest.SERVICE, "Charge"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .build();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry r) {
    r.add("spring.datasource.url", () -> "jdbc:sqlite:" + DIR.resolve("app.db") + "?journal_mode=WAL&busy_timeout=10000");
    r.add("idem.principal", () -> "shared");
    r.add("spring.grpc.server.inprocess.name", () -> SERVER);
    r.add("spring.grpc.server.inprocess.exclusive", () -> "true");
    r.add("spring.grpc.server.port", () -> "0");
    r.add("idem.grpc.methods.create.method", () -> "idem.test.Notes/Create"); // key required by default
    r.add("idem.grpc.methods.create.mode", () -> "transactional");
    r.add("idem.grpc.methods.charge.method", () -> "idem.test.Notes/Charge");
    r.add("idem.grpc.methods.charge.mode", () -> "lease");
    r.add("idem.grpc.methods.charge.store", () -> "memory");
    r.add("idem.grpc.methods.charge.key", () -> "optional");
  }

  /** What each run saw: "create in a transaction", "charge outside". */
  static final Queue<String> RUNS = new ConcurrentLinkedQueue<>();

  /** Create writes a row through the JdbcTemplate; Charge stands for a call to a payment API. */
  static class Notes implements BindableService {
    private final JdbcTemplate jdbc;

    Notes(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
      jdbc.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL)");
    }

    @Override
    public ServerServiceDefinition bindService() {
      return ServerServiceDefinition.builder(SpringGrpcTest.SERVICE)
          .addMethod(SpringGrpcTest.CREATE, ServerCalls.asyncUnaryCall((request, observer) -> {
            RUNS.add("create " + where());
            jdbc.update("INSERT INTO notes(text) VALUES (?)", request.getFieldsOrThrow("text").getStringValue());
            observer.onNext(StringValue.of("note-" + jdbc.queryForObject("SELECT MAX(id) FROM notes", Long.class)));
            observer.onCompleted();
          }))
          .addMethod(CHARGE, ServerCalls.asyncUnaryCall((request, observer) -> {
            RUNS.add("charge " + where());
            observer.onNext(StringValue.of("charge-" + RUNS.size()));
            observer.onCompleted();
          }))
          .addMethod(SpringGrpcTest.WATCH, ServerCalls.asyncServerStreamingCall((request, observer) -> observer.onCompleted()))
          .build();
    }

    private static String where() {
      return TransactionSynchronizationManager.isActualTransactionActive() ? "in a transaction" : "outside";
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

  private ManagedChannel channel;

  @BeforeEach
  void channel() {
    channel = InProcessChannelBuilder.forName(SERVER).directExecutor().build();
    RUNS.clear();
  }

  @AfterEach
  void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private StringValue call(MethodDescriptor<Struct, StringValue> method, String key, String text) {
    io.grpc.Channel target = channel;
    if (key != null) {
      Metadata headers = new Metadata();
      headers.put(Metadata.Key.of("idempotency-key", Metadata.ASCII_STRING_MARSHALLER), key);
      target = io.grpc.ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
    }
    return ClientCalls.blockingUnaryCall(target, method, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
        Struct.newBuilder().putFields("text", Value.newBuilder().setStringValue(text).build()).build());
  }

  private int rows(String text) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM notes WHERE text = ?", Integer.class, text);
  }

  @Test
  void createRunsOnceInTheKeysTransactionAndRequiresAKey() {
    String key = UUID.randomUUID().toString();
    StringValue first = call(SpringGrpcTest.CREATE, key, "buy milk");
    assertThat(call(SpringGrpcTest.CREATE, key, "buy milk")).isEqualTo(first);
    assertThat(rows("buy milk")).isEqualTo(1);
    assertThat(RUNS).containsExactly("create in a transaction");

    StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
        () -> call(SpringGrpcTest.CREATE, null, "no key"));
    assertThat(refused).isNotNull();
    assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(rows("no key")).isZero();
  }

  @Test
  void chargeRunsOnceOutsideAnyTransactionAndLetsACallWithoutAKeyThrough() {
    String key = UUID.randomUUID().toString();
    StringValue first = call(CHARGE, key, "10 EUR");
    assertThat(call(CHARGE, key, "10 EUR")).isEqualTo(first);
    assertThat(RUNS).containsExactly("charge outside");

    call(CHARGE, null, "5 EUR");
    call(CHARGE, null, "5 EUR");
    assertThat(RUNS).containsExactly("charge outside", "charge outside", "charge outside");
  }

  @TempDir Path dir;

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withUserConfiguration(App.class)
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("refusals.db"), "idem.principal=shared",
            "idem.store=memory");
  }

  @Test
  void aPolicyForAStreamingMethodStopsTheStartUp() {
    app().withPropertyValues("idem.grpc.methods.watch.method=idem.test.Notes/Watch").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).hasStackTraceContaining("idem.grpc.methods")
          .hasStackTraceContaining("idem.test.Notes/Watch is a SERVER_STREAMING method");
    });
  }

  @Test
  void aPolicyForNoMethodOfTheServicesStopsTheStartUp() {
    app().withPropertyValues("idem.grpc.methods.pay.method=idem.test.Notes/Pay").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).hasStackTraceContaining("\"idem.test.Notes/Pay\" names no method of the services served");
    });
  }

  @Test
  void aPolicyWithoutAMethodOrWithAMalformedOneStopsTheStartUp() {
    app().withPropertyValues("idem.grpc.methods.pay.mode=lease").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).hasStackTraceContaining("idem.grpc.methods.pay.method")
          .hasStackTraceContaining("package.Service/Method");
    });
    app().withPropertyValues("idem.grpc.methods.pay.method=Notes.Create").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).hasStackTraceContaining("idem.grpc.methods.pay.method")
          .hasStackTraceContaining("got \"Notes.Create\"");
    });
  }

  @Test
  void twoEntriesNamingOneMethodStopTheStartUpNamingTheSecond() {
    app().withPropertyValues("idem.grpc.methods.a.method=idem.test.Notes/Create", "idem.grpc.methods.b.method= idem.test.Notes/Create ")
        .run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(ctx.getStartupFailure()).hasStackTraceContaining("idem.grpc.methods.b.method")
              .hasStackTraceContaining("given twice");
        });
  }

  @Test
  void aServicePolicyBesideAMethodPolicyOfTheSameServiceStarts() {
    app().withPropertyValues("idem.grpc.methods.all.method=idem.test.Notes/*", "idem.grpc.methods.all.key=optional",
        "idem.grpc.methods.create.method=idem.test.Notes/Create", "idem.grpc.methods.create.mode=transactional")
        .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(dev.idem.grpc.IdempotencyServerInterceptor.class));
  }

  @Test
  void aTransactionalPolicyWithItsKeysInRedisStopsTheStartUp() {
    app().withPropertyValues("idem.grpc.methods.create.method=idem.test.Notes/Create", "idem.grpc.methods.create.mode=transactional",
        "idem.grpc.methods.create.store=redis").run(ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(ctx.getStartupFailure()).hasStackTraceContaining("idem.grpc.methods.create.store")
              .hasStackTraceContaining("transactional");
        });
  }
}
