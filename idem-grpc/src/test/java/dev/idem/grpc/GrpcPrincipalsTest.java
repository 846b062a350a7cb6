package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.KeyStatus;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.spi.PrincipalResolver;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The principal strings of the gRPC stack, which are part of every stored key's scope: the same
 * call must give the same string as the interceptor's earlier resolver type did ({@code
 * GrpcPrincipalResolver.fromContext}: the context value's {@code toString()}; {@code fixed}: the
 * name; none: {@value IdempotencyServerInterceptor#DEFAULT_ANONYMOUS_PRINCIPAL}), or retries of
 * keys stored before an upgrade would run again.
 */
class GrpcPrincipalsTest {

  private static final Context.Key<Object> CALLER = Context.key("caller");
  private static final String CREATE = TestService.SERVICE + "/Create";

  /** Puts the caller named in the {@code x-caller} header in the context, as an authenticating interceptor would. */
  private static final ServerInterceptor AUTHENTICATE = new ServerInterceptor() {
    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
        ServerCallHandler<ReqT, RespT> next) {
      String caller = headers.get(Metadata.Key.of("x-caller", Metadata.ASCII_STRING_MARSHALLER));
      Context context = Context.current().withValue(CALLER, caller == null ? null : new StringBuilder(caller));
      return Contexts.interceptCall(context, call, headers, next);
    }
  };

  /** @return whether the store holds a completed record of the key in exactly that principal's scope */
  private static boolean stored(InMemoryLeaseStore store, String principal, String key) {
    return store.status(Scope.of(principal, CREATE), IdempotencyKey.of(key)) instanceof KeyStatus.Completed;
  }

  private static void call(IdempotencyServerInterceptor idem, @Nullable String caller, String key) throws Exception {
    try (TestService service = new TestService(idem, null, AUTHENTICATE)) {
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), key);
      if (caller != null) {
        Metadata headers = new Metadata();
        headers.put(Metadata.Key.of("x-caller", Metadata.ASCII_STRING_MARSHALLER), caller);
        stub = stub.withInterceptors(io.grpc.stub.MetadataUtils.newAttachHeadersInterceptor(headers));
      }
      stub.create(note("buy milk"));
    }
  }

  @Test
  void fromContextIsTheContextValuesStringAsBefore() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(LeaseIdempotency.builder(store).build())
        .principalResolver(GrpcPrincipals.fromContext(CALLER)).build();
    call(idem, "alice", "k-alice");
    call(idem, null, "k-nobody");
    assertThat(stored(store, "alice", "k-alice")).isTrue();
    assertThat(stored(store, IdempotencyServerInterceptor.DEFAULT_ANONYMOUS_PRINCIPAL, "k-nobody")).isTrue();
  }

  @Test
  void fixedAndTheDefaultAreTheNameAndTheAnonymousPrincipalAsBefore() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    LeaseIdempotency engine = LeaseIdempotency.builder(store).build();
    call(IdempotencyServerInterceptor.builder(engine).principal("orders-service").build(), "alice", "k-fixed");
    call(IdempotencyServerInterceptor.builder(engine).principalResolver(PrincipalResolver.fixed("billing")).build(), "alice", "k-spi");
    call(IdempotencyServerInterceptor.builder(engine).build(), "alice", "k-default");
    assertThat(stored(store, "orders-service", "k-fixed")).isTrue();
    assertThat(stored(store, "billing", "k-spi")).isTrue();
    assertThat(stored(store, IdempotencyServerInterceptor.DEFAULT_ANONYMOUS_PRINCIPAL, "k-default")).isTrue();
  }

  @Test
  void anApplicationWideResolverGetsTheCallsMetadataAndContext() throws Exception {
    InMemoryLeaseStore store = new InMemoryLeaseStore();
    PrincipalResolver<Object> everyStack = call -> call instanceof GrpcCall grpc
        ? "tenant-" + grpc.headers().get(Metadata.Key.of("x-caller", Metadata.ASCII_STRING_MARSHALLER)) + "-" + CALLER.get(grpc.context())
        : null;
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(LeaseIdempotency.builder(store).build())
        .principalResolver(everyStack).build();
    call(idem, "bob", "k-bob");
    assertThat(stored(store, "tenant-bob-bob", "k-bob")).isTrue();
  }
}
