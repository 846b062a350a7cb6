package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import dev.idem.core.IdemListener;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The quick start of docs/grpc.md, run: its regions are the page's snippets. */
class GrpcQuickStartTest {

  @Test
  void theQuickStartProtectsAUnaryCreate() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    ServerServiceDefinition notes = ServerServiceDefinition.builder(TestService.SERVICE)
        .addMethod(TestService.CREATE, ServerCalls.asyncUnaryCall((request, observer) -> {
          observer.onNext(StringValue.of("note-" + runs.incrementAndGet()));
          observer.onCompleted();
        }))
        .build();
    String name = InProcessServerBuilder.generateName();

    // tag::server[]
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).build(); // or JdbcLeaseStore, RedisLeaseStore
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(engine)
        .principal("orders-service") // or .principalResolver(GrpcPrincipals.fromContext(CALLER))
        .build();
    Server server = InProcessServerBuilder.forName(name) // or NettyServerBuilder: below
        .addService(ServerInterceptors.intercept(notes, idem))
        .build()
        .start();
    // end::server[]

    // tag::client[]
    ManagedChannel channel = InProcessChannelBuilder.forName(name)
        .intercept(IdempotencyClientInterceptor.create()) // one key per call, the same on every attempt
        .enableRetry()
        .build();
    // end::client[]
    try {
      TestService.Stub stub = new TestService.Stub(channel, io.grpc.CallOptions.DEFAULT);
      Struct request = TestService.note("buy milk");
      assertThat(createWithRetries(stub, request).getValue()).isEqualTo("note-1");
      assertThat(runs).hasValue(1);
    } finally {
      channel.shutdownNow();
      server.shutdownNow();
      server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void theQuickStartOnNettyWithHedging() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    ServerServiceDefinition notes = ServerServiceDefinition.builder(TestService.SERVICE)
        .addMethod(TestService.CREATE, ServerCalls.asyncUnaryCall((request, observer) -> {
          int run = runs.incrementAndGet();
          try {
            Thread.sleep(400); // slower than the hedging delay: the channel sends hedged copies
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          observer.onNext(StringValue.of("note-" + run));
          observer.onCompleted();
        }))
        .build();
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();

    // tag::netty[]
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(engine)
        .principal("orders-service")
        .services(notes) // logs the streaming methods it leaves unprotected
        .build();
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), InsecureServerCredentials.create())
        .addService(ServerInterceptors.intercept(notes, idem))
        .build()
        .start();
    Map<String, ?> hedging = Map.of("methodConfig", List.of(Map.of(
        "name", List.of(Map.of("service", "idem.test.Notes")),
        "hedgingPolicy", Map.of(
            "maxAttempts", 3.0,
            "hedgingDelay", "0.1s",
            "nonFatalStatusCodes", List.of("UNAVAILABLE"))))); // IN_PROGRESS refusals: go on hedging
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
        .usePlaintext()
        .intercept(IdempotencyClientInterceptor.create()) // every hedged copy carries the call's key
        .defaultServiceConfig(hedging)
        .enableRetry()
        .build();
    // end::netty[]
    try {
      TestService.Stub stub = new TestService.Stub(channel, io.grpc.CallOptions.DEFAULT);
      assertThat(stub.create(TestService.note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(runs).hasValue(1);
    } finally {
      channel.shutdownNow();
      server.shutdownNow();
      server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void streamingMethodsAreListedAndAStreamingMethodCannotBeProtected() {
    ServerServiceDefinition notes = ServerServiceDefinition.builder(TestService.SERVICE)
        .addMethod(TestService.CREATE, ServerCalls.asyncUnaryCall((request, observer) -> observer.onCompleted()))
        .addMethod(TestService.WATCH, ServerCalls.asyncServerStreamingCall((request, observer) -> observer.onCompleted()))
        .build();
    LeaseIdempotency engine = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();

    // tag::streaming[]
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(engine)
        .protect(TestService.CREATE) // only these unary methods; default: every unary method
        .services(notes) // or .bindableServices(new NotesService()): the services it will serve
        .build(); // logs "... 1 streaming method(s) pass through unprotected ...: idem.test.Notes/Watch (SERVER_STREAMING)"
    List<String> unprotected = idem.unprotectedStreamingMethods(); // [idem.test.Notes/Watch (SERVER_STREAMING)]
    // IdempotencyServerInterceptor.builder(engine).protect(TestService.WATCH): IllegalArgumentException,
    // "idem.test.Notes/Watch is a SERVER_STREAMING method and cannot be protected (protect(...)): ..."
    // end::streaming[]
    assertThat(unprotected).containsExactly("idem.test.Notes/Watch (SERVER_STREAMING)");
    assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(engine).protect(TestService.WATCH))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("idem.test.Notes/Watch is a SERVER_STREAMING method and cannot be protected (protect(...)): ");
  }

  @Test
  void methodPoliciesGiveEachMethodItsOwnEngineAndKeyRequirement() throws Exception {
    java.nio.file.Path file = java.nio.file.Files.createTempFile("idem-grpc-policies", ".db");
    try {
      org.sqlite.SQLiteDataSource dataSource = new org.sqlite.SQLiteDataSource();
      dataSource.setUrl("jdbc:sqlite:" + file);
      dev.idem.jdbc.JdbcIdempotency keys = dev.idem.jdbc.JdbcIdempotency.builder().createSchema(true).build();
      try (java.sql.Connection c = dataSource.getConnection()) {
        keys.createSchema(c);
      }
      // tag::per-method[]
      TransactionalIdempotency notesEngine = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
      LeaseIdempotency paymentsEngine = LeaseIdempotency.builder(new InMemoryLeaseStore()).build(); // or RedisLeaseStore
      IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(paymentsEngine) // every other unary method
          .methodPolicy("idem.test.Notes/Create", notesEngine, true) // transactional, key required
          .methodPolicy("idem.test.Notes/Charge", paymentsEngine, false) // lease, a call without a key runs unprotected
          .methodPolicy("idem.test.Reports/*", notesEngine, false) // every unary method of a service
          .build();
      // end::per-method[]
      try (TestService service = new TestService(idem)) {
        TestService.Stub keyed = IdempotencyKeys.withKey(service.stub(), "k-1");
        assertThat(keyed.create(note("a")).getValue()).isEqualTo(keyed.create(note("a")).getValue());
        assertThat(keyed.charge(note("a")).getValue()).isEqualTo(keyed.charge(note("a")).getValue());
        assertThat(service.runs).hasValue(1);
        assertThat(service.charges).hasValue(1);
      }
    } finally {
      java.nio.file.Files.deleteIfExists(file);
    }
  }

  static StringValue createWithRetries(TestService.Stub stub, Struct request) {
    // tag::by-hand[]
    TestService.Stub keyed = IdempotencyKeys.withKey(stub, IdempotencyKeys.newKey()); // once, before the loop
    for (int attempt = 1; ; attempt++) {
      try {
        return keyed.create(request);
      } catch (StatusRuntimeException e) {
        if (attempt == 3 || e.getStatus().getCode() != Status.Code.UNAVAILABLE) {
          throw e;
        }
      }
    }
    // end::by-hand[]
  }
}
