package dev.idem.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ServerCalls;
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
        .principal("orders-service") // or .principalResolver(GrpcPrincipalResolver.fromContext(CALLER))
        .build();
    Server server = InProcessServerBuilder.forName(name) // or NettyServerBuilder.forPort(port)
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
