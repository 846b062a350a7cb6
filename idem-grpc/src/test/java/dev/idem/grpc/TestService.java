package dev.idem.grpc;

import com.google.protobuf.StringValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.CallOptions;
import io.grpc.Channel;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A notes service without generated code: {@code Create} takes a {@link Struct} and answers a
 * {@link StringValue} naming the run ({@code note-1}, {@code note-2}, ...), {@code Watch} is a server
 * streaming method. The handler counts its runs, can be slow (answering from another thread after
 * a delay), and can fail its first runs. An in-process server and channel, or (with {@link
 * Transport#NETTY}) a Netty server on a loopback port and a Netty channel to it: real HTTP/2.
 */
final class TestService implements AutoCloseable {

  static final String SERVICE = "idem.test.Notes";

  /** Where the server listens and the channel connects. */
  enum Transport {
    /** grpc-java's in-process transport: no sockets. */
    IN_PROCESS,
    /** grpc-netty-shaded: a server on 127.0.0.1, an HTTP/2 connection to it. */
    NETTY
  }

  static final MethodDescriptor<Struct, StringValue> CREATE = MethodDescriptor.<Struct, StringValue>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Create"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .build();

  /** A second unary method, for policies per method: answers {@code charge-1}, {@code charge-2}, ... */
  static final MethodDescriptor<Struct, StringValue> CHARGE = MethodDescriptor.<Struct, StringValue>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Charge"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .build();

  static final MethodDescriptor<Struct, StringValue> WATCH = MethodDescriptor.<Struct, StringValue>newBuilder()
      .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Watch"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .build();

  /** The key every attempt reaching the server carried (null for none), in arrival order. */
  final Queue<String> keysSeen = new ConcurrentLinkedQueue<>();
  /** The grpc-previous-rpc-attempts of each attempt ("0" for the first). */
  final Queue<String> previousAttempts = new ConcurrentLinkedQueue<>();
  final AtomicInteger runs = new AtomicInteger();
  final AtomicInteger watchRuns = new AtomicInteger();
  final AtomicInteger charges = new AtomicInteger();
  /** What each Charge run does before it answers, on the handler's thread. */
  volatile java.util.function.Consumer<Struct> chargeEffect = request -> {};
  volatile long handlerDelayMillis;
  /** How many of the first runs fail, and how. */
  volatile int failingRuns;
  volatile boolean failByThrowing;
  /** The failing runs' answer, or null for INTERNAL. */
  volatile com.google.rpc.Status failWith;
  /** What each run does before it answers (or fails), on the handler's thread. */
  volatile java.util.function.Consumer<Struct> sideEffect = request -> {};

  private final ScheduledExecutorService later = Executors.newScheduledThreadPool(4);
  private final String name = InProcessServerBuilder.generateName();
  private final Server server;
  private final ManagedChannel channel;

  /**
   * @param idem the interceptor under test
   * @param serviceConfig the channel's service config, or null for none
   * @param outer interceptors outside Idem's (closer to the transport), the last one outermost
   */
  TestService(ServerInterceptor idem, Map<String, ?> serviceConfig, ServerInterceptor... outer) throws IOException {
    this(Transport.IN_PROCESS, idem, serviceConfig, outer);
  }

  /**
   * @param transport in-process or Netty
   * @param idem the interceptor under test
   * @param serviceConfig the channel's service config, or null for none
   * @param outer interceptors outside Idem's (closer to the transport), the last one outermost
   */
  TestService(Transport transport, ServerInterceptor idem, Map<String, ?> serviceConfig, ServerInterceptor... outer)
      throws IOException {
    ServerServiceDefinition service = ServerServiceDefinition.builder(SERVICE)
        .addMethod(CREATE, ServerCalls.asyncUnaryCall((request, observer) -> {
          int run = runs.incrementAndGet();
          sideEffect.accept(request);
          if (run <= failingRuns) {
            if (failByThrowing) {
              throw new IllegalStateException("run " + run + " fails");
            }
            com.google.rpc.Status failure = failWith;
            observer.onError(failure != null
                ? io.grpc.protobuf.StatusProto.toStatusRuntimeException(failure)
                : Status.INTERNAL.withDescription("run " + run + " fails").asRuntimeException());
            return;
          }
          StringValue answer = StringValue.of("note-" + run);
          long delay = handlerDelayMillis;
          if (delay == 0) {
            observer.onNext(answer);
            observer.onCompleted();
          } else {
            later.schedule(() -> {
              observer.onNext(answer);
              observer.onCompleted();
            }, delay, TimeUnit.MILLISECONDS);
          }
        }))
        .addMethod(CHARGE, ServerCalls.asyncUnaryCall((request, observer) -> {
          int run = charges.incrementAndGet();
          chargeEffect.accept(request);
          observer.onNext(StringValue.of("charge-" + run));
          observer.onCompleted();
        }))
        .addMethod(WATCH, ServerCalls.asyncServerStreamingCall((request, observer) -> {
          watchRuns.incrementAndGet();
          observer.onNext(StringValue.of("a"));
          observer.onNext(StringValue.of("b"));
          observer.onCompleted();
        }))
        .build();
    ServerInterceptor recorder = new ServerInterceptor() {
      @Override
      public <ReqT, RespT> io.grpc.ServerCall.Listener<ReqT> interceptCall(
          io.grpc.ServerCall<ReqT, RespT> call, Metadata headers, io.grpc.ServerCallHandler<ReqT, RespT> next) {
        String key = headers.get(IdempotencyKeys.HEADER);
        keysSeen.add(key == null ? "<none>" : key);
        String previous = headers.get(Metadata.Key.of("grpc-previous-rpc-attempts", Metadata.ASCII_STRING_MARSHALLER));
        previousAttempts.add(previous == null ? "0" : previous);
        return next.startCall(call, headers);
      }
    };
    ServerInterceptor[] chain = new ServerInterceptor[outer.length + 2];
    chain[0] = idem;
    System.arraycopy(outer, 0, chain, 1, outer.length);
    chain[chain.length - 1] = recorder;
    ServerServiceDefinition intercepted = ServerInterceptors.intercept(service, chain);
    ManagedChannelBuilder<?> channelBuilder;
    if (transport == Transport.NETTY) {
      InetAddress loopback = InetAddress.getLoopbackAddress();
      server = NettyServerBuilder.forAddress(new InetSocketAddress(loopback, 0), InsecureServerCredentials.create())
          .addService(intercepted)
          .build()
          .start();
      channelBuilder = NettyChannelBuilder.forAddress(new InetSocketAddress(loopback, server.getPort()),
          InsecureChannelCredentials.create());
    } else {
      server = InProcessServerBuilder.forName(name)
          .addService(intercepted)
          .build()
          .start();
      channelBuilder = InProcessChannelBuilder.forName(name);
    }
    channelBuilder.intercept(IdempotencyClientInterceptor.create()).enableRetry();
    if (serviceConfig != null) {
      channelBuilder.defaultServiceConfig(serviceConfig);
    }
    channel = channelBuilder.build();
  }

  TestService(ServerInterceptor idem) throws IOException {
    this(idem, null);
  }

  Stub stub() {
    return new Stub(channel, CallOptions.DEFAULT);
  }

  /** A stub whose calls reach Idem without a key (the channel gives every call one; {@link #dropsKeyNone} drops this one). */
  static Stub noKey(TestService service) {
    return IdempotencyKeys.withKey(service.stub(), "none");
  }

  /** Outside Idem's interceptor: removes the key {@code none}, so that call arrives without a key. */
  static ServerInterceptor dropsKeyNone() {
    return new ServerInterceptor() {
      @Override
      public <ReqT, RespT> io.grpc.ServerCall.Listener<ReqT> interceptCall(
          io.grpc.ServerCall<ReqT, RespT> call, Metadata headers, io.grpc.ServerCallHandler<ReqT, RespT> next) {
        if ("none".equals(headers.get(IdempotencyKeys.HEADER))) {
          headers.removeAll(IdempotencyKeys.HEADER);
        }
        return next.startCall(call, headers);
      }
    };
  }

  /** @return the {@code ErrorInfo} reason of Idem's refusal {@code e}, or {@code (none)} */
  static String reason(io.grpc.StatusRuntimeException e) {
    com.google.rpc.Status status = io.grpc.protobuf.StatusProto.fromThrowable(e);
    try {
      return status == null || status.getDetailsCount() == 0 ? "(none)"
          : status.getDetails(0).unpack(com.google.rpc.ErrorInfo.class).getReason();
    } catch (com.google.protobuf.InvalidProtocolBufferException ex) {
      throw new AssertionError(ex);
    }
  }

  /** @return the rows of the table {@code notes} the tests' handlers write */
  static long notes(javax.sql.DataSource dataSource) {
    try (java.sql.Connection c = dataSource.getConnection(); java.sql.Statement st = c.createStatement();
         java.sql.ResultSet rs = st.executeQuery("SELECT count(*) FROM notes")) {
      rs.next();
      return rs.getLong(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static Struct note(String text) {
    return Struct.newBuilder().putFields("text", Value.newBuilder().setStringValue(text).build()).build();
  }

  /** A service config: a retry policy on UNAVAILABLE, 3 attempts, 10 ms backoff. */
  static Map<String, ?> retryPolicy() {
    return Map.of("methodConfig", List.of(Map.of(
        "name", List.of(Map.of("service", SERVICE)),
        "retryPolicy", Map.of(
            "maxAttempts", 3.0,
            "initialBackoff", "0.01s",
            "maxBackoff", "0.05s",
            "backoffMultiplier", 2.0,
            "retryableStatusCodes", List.of("UNAVAILABLE")))));
  }

  /** A service config: hedging, 3 attempts 100 ms apart, UNAVAILABLE (in progress) non-fatal. */
  static Map<String, ?> hedgingPolicy() {
    return Map.of("methodConfig", List.of(Map.of(
        "name", List.of(Map.of("service", SERVICE)),
        "hedgingPolicy", Map.of(
            "maxAttempts", 3.0,
            "hedgingDelay", "0.1s",
            "nonFatalStatusCodes", List.of("UNAVAILABLE")))));
  }

  @Override
  public void close() {
    channel.shutdownNow();
    server.shutdownNow();
    later.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
      server.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A hand-written stub, as generated ones are: calls on its channel with its call options. */
  static final class Stub extends AbstractStub<Stub> {
    Stub(Channel channel, CallOptions options) {
      super(channel, options);
    }

    @Override
    protected Stub build(Channel channel, CallOptions options) {
      return new Stub(channel, options);
    }

    StringValue create(Struct request) {
      return ClientCalls.blockingUnaryCall(getChannel(), CREATE, getCallOptions(), request);
    }

    StringValue charge(Struct request) {
      return ClientCalls.blockingUnaryCall(getChannel(), CHARGE, getCallOptions(), request);
    }

    List<StringValue> watch(Struct request) {
      List<StringValue> answers = new java.util.ArrayList<>();
      ClientCalls.blockingServerStreamingCall(getChannel(), WATCH, getCallOptions(), request).forEachRemaining(answers::add);
      return answers;
    }
  }
}
