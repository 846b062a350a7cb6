package dev.idem.lab;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.rpc.ErrorInfo;
import dev.idem.core.IdemListener;
import dev.idem.grpc.GrpcTransactions;
import dev.idem.grpc.IdempotencyClientInterceptor;
import dev.idem.grpc.IdempotencyKeys;
import dev.idem.grpc.IdempotencyServerInterceptor;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.jdbc.EffectTable;
import dev.idem.lab.jdbc.JdbcTarget;
import io.grpc.CallOptions;
import io.grpc.ForwardingServerCall;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * The seed article's experiments over gRPC: the same four scenarios as {@link Lab}, each run
 * against a unary {@code idem.lab.Notes/Create} method served by grpc-java on a Netty server on the
 * loopback interface, once without protection ({@value Lab#NAIVE}: a server whose handler inserts
 * on every call) and once with Idem ({@value Lab#PROTECTED}: the same handler behind an {@link
 * IdempotencyServerInterceptor} in transactional mode, writing on {@link
 * GrpcTransactions#connection()}). The effects are counted with SQL afterwards.
 *
 * <ol>
 *   <li>{@code lost-response}: one call; the first attempt's answer is lost after the commit (an
 *       interceptor outside Idem's, nearer the transport, drops the answer's headers and message and
 *       closes the call {@code UNAVAILABLE}); the channel's retry policy sends the call again, and
 *       {@link IdempotencyClientInterceptor} gives the retry the call's key.
 *   <li>{@code concurrent}: N calls with the same key, each from its own thread, released together
 *       by a barrier.
 *   <li>{@code key-reuse}: the same key with a different payload ({@code FAILED_PRECONDITION},
 *       {@code KEY_REUSED}, counted as rejected).
 *   <li>{@code distinct-keys}: two calls with identical payloads, each with its own key.
 * </ol>
 *
 * <p>The loss is injected in code, after the commit, as in the seed article's lab; it is not a
 * network failure. The lab owns the tables {@value Lab#EFFECTS_TABLE} and {@value Lab#KEYS_TABLE}
 * and recreates them at the start of every run. Not thread-safe: run one lab at a time per
 * database.
 */
public final class GrpcLab {

  /** The lab's service: {@value}. */
  public static final String SERVICE = "idem.lab.Notes";

  /** What the lab's report names as its transport. */
  public static final String TRANSPORT = "gRPC over Netty (HTTP/2 on the loopback interface)";

  /**
   * {@code idem.lab.Notes/Create}: a {@link Struct} {@code {tag, value}} in ({@link #request}), {@code
   * {id}} out ({@link #idOf}); unary, with ProtoUtils' marshallers (no generated code). Also the
   * method of the gRPC benchmark (GrpcLoad in idem-benchmarks). Immutable, thread-safe.
   */
  public static final MethodDescriptor<Struct, Struct> CREATE = MethodDescriptor.<Struct, Struct>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Create"))
      .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
      .build();

  private final JdbcTarget target;
  private final int concurrency;
  private final EffectTable effects = new EffectTable(Lab.EFFECTS_TABLE);
  private final String run = UUID.randomUUID().toString().substring(0, 8);

  /**
   * @param target the database, never {@code null}
   * @param concurrency calls in the {@code concurrent} scenario, from 2 to 256
   * @throws IllegalArgumentException if {@code concurrency} is out of range
   */
  public GrpcLab(JdbcTarget target, int concurrency) {
    this.target = Objects.requireNonNull(target, "target");
    if (concurrency < 2 || concurrency > 256) {
      throw new IllegalArgumentException("concurrency must be between 2 and 256, was " + concurrency);
    }
    this.concurrency = concurrency;
  }

  /**
   * Recreates the lab's tables, starts the two servers (naive and protected) and their channels,
   * runs every scenario under both variants, and stops them.
   *
   * @return the report, one row per scenario and variant, in {@link Lab#SCENARIOS} order
   * @throws SQLException if the database cannot be reached or the tables cannot be created
   * @throws IOException if a server cannot bind a loopback port
   * @throws InterruptedException if interrupted while calls run
   */
  public LabReport run() throws SQLException, IOException, InterruptedException {
    JdbcIdempotency keys = JdbcIdempotency.builder().table(Lab.KEYS_TABLE).build();
    String database;
    try (Connection c = target.open()) {
      database = c.getMetaData().getDatabaseProductName() + " " + c.getMetaData().getDatabaseProductVersion();
      effects.recreate(c);
      try (Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + Lab.KEYS_TABLE);
      }
      keys.createSchema(c);
    }
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(
            TransactionalIdempotency.onDataSource(keys, target.dataSource(), IdemListener.NONE))
        .principal("lab")
        .keyRequired(true)
        .build();
    List<ScenarioResult> results = new ArrayList<>();
    try (Endpoint naive = new Endpoint(null); Endpoint guarded = new Endpoint(idem)) {
      for (String scenario : Lab.SCENARIOS) {
        results.add(runScenario(scenario, Lab.NAIVE, naive));
        results.add(runScenario(scenario, Lab.PROTECTED, guarded));
      }
    }
    return new LabReport(database, Lab.redact(target.url()), results);
  }

  private ScenarioResult runScenario(String scenario, String variant, Endpoint endpoint)
      throws SQLException, InterruptedException {
    String tag = "grpc/" + scenario + "/" + variant + "/" + run;
    endpoint.arrivals.set(0);
    endpoint.lostIds.clear();
    Tally tally = new Tally();
    long intended;
    switch (scenario) {
      case "lost-response":
        endpoint.loseNextAnswer.set(true);
        call(endpoint, null, request(tag, 42), tally);
        intended = 1;
        break;
      case "concurrent":
        concurrent(endpoint, IdempotencyKeys.newKey(), request(tag, 42), tally);
        intended = 1;
        break;
      case "key-reuse": {
        String key = IdempotencyKeys.newKey();
        call(endpoint, key, request(tag, 42), tally);
        call(endpoint, key, request(tag, 43), tally);
        intended = 1;
        break;
      }
      case "distinct-keys":
        call(endpoint, null, request(tag, 42), tally);
        call(endpoint, null, request(tag, 42), tally);
        intended = 2;
        break;
      default:
        throw new IllegalArgumentException("unknown scenario " + scenario);
    }
    long stored;
    try (Connection c = target.open()) {
      stored = effects.count(c, tag);
    }
    List<Long> ids = new ArrayList<>(endpoint.lostIds);
    ids.addAll(tally.ids);
    int lost = endpoint.lostIds.size();
    return judge(scenario, variant, endpoint.arrivals.get(), stored, ids, lost, tally, intended);
  }

  private static ScenarioResult judge(String scenario, String variant, int attempts, long stored, List<Long> ids,
      int lost, Tally t, long intended) {
    long distinct = new HashSet<>(ids).size();
    String verdict;
    if (t.errors > 0) {
      verdict = t.errors + " call(s) failed: " + t.firstError;
    } else if (stored > intended) {
      verdict = "duplicate effect";
    } else if (stored < intended) {
      verdict = "missing effect";
    } else if (scenario.equals("distinct-keys") ? distinct != 2 : distinct != 1) {
      verdict = "wrong ids";
    } else if (scenario.equals("key-reuse") && t.rejected != 1) {
      verdict = "reuse not rejected";
    } else if (scenario.equals("lost-response") && lost != 1) {
      verdict = "no answer was lost";
    } else {
      verdict = "ok";
    }
    return new ScenarioResult(scenario, variant, attempts, stored, ids, lost, t.rejected, t.errors, intended, verdict,
        verdict.equals("ok"));
  }

  /** One call (retried by the channel's policy), with {@code key} or a fresh one from the interceptor. */
  private static void call(Endpoint endpoint, String key, Struct request, Tally tally) {
    try {
      tally.ids.add(endpoint.create(key, request));
    } catch (StatusRuntimeException e) {
      if (isKeyReused(e)) {
        tally.rejected++;
      } else {
        tally.error(e);
      }
    } catch (RuntimeException e) {
      tally.error(e);
    }
  }

  private void concurrent(Endpoint endpoint, String key, Struct request, Tally tally) throws InterruptedException {
    CyclicBarrier barrier = new CyclicBarrier(concurrency);
    ExecutorService callers = Executors.newFixedThreadPool(concurrency);
    try {
      List<Future<Long>> answers = new ArrayList<>();
      for (int i = 0; i < concurrency; i++) {
        answers.add(callers.submit(() -> {
          barrier.await(30, TimeUnit.SECONDS);
          return endpoint.create(key, request);
        }));
      }
      for (Future<Long> answer : answers) {
        try {
          tally.ids.add(answer.get(60, TimeUnit.SECONDS));
        } catch (ExecutionException e) {
          tally.error(e.getCause());
        } catch (TimeoutException e) {
          tally.error(new IllegalStateException("no answer within 60 s"));
        }
      }
    } finally {
      callers.shutdownNow();
      callers.awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  private static boolean isKeyReused(StatusRuntimeException e) {
    if (e.getStatus().getCode() != Status.Code.FAILED_PRECONDITION) {
      return false;
    }
    com.google.rpc.Status status = StatusProto.fromThrowable(e);
    if (status == null) {
      return false;
    }
    for (com.google.protobuf.Any detail : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        try {
          ErrorInfo info = detail.unpack(ErrorInfo.class);
          return info.getDomain().equals(IdempotencyServerInterceptor.ERROR_DOMAIN) && info.getReason().equals("KEY_REUSED");
        } catch (com.google.protobuf.InvalidProtocolBufferException ignored) {
          return false;
        }
      }
    }
    return false;
  }

  /**
   * @param tag the effect's tag, never {@code null}
   * @param value the payload's number; exact up to 2^53 in magnitude (a {@code Struct} number is a double)
   * @return the request of {@link #CREATE}: {@code {tag, value}}
   */
  public static Struct request(String tag, long value) {
    return Struct.newBuilder()
        .putFields("tag", Value.newBuilder().setStringValue(tag).build())
        .putFields("value", Value.newBuilder().setNumberValue(value).build())
        .build();
  }

  /**
   * @param answer an answer of {@link #CREATE}, never {@code null}
   * @return its {@code id}
   * @throws IllegalArgumentException if it has no {@code id} field
   */
  public static long idOf(Struct answer) {
    return (long) answer.getFieldsOrThrow("id").getNumberValue();
  }

  /**
   * @param id the created effect's id
   * @return the answer of {@link #CREATE}: {@code {id}}
   */
  public static Struct answer(long id) {
    return Struct.newBuilder().putFields("id", Value.newBuilder().setNumberValue(id).build()).build();
  }

  /**
   * The lab's handler of {@link #CREATE}: inserts one effect into {@code effects} with the request's
   * tag and {@code {"value":N}} as its payload, on Idem's transaction when there is one ({@link
   * GrpcTransactions#connection()}: it commits with the stored answer), else on a connection of its
   * own from {@code connections} in auto-commit, and answers {@code {id}}. A failed insert answers
   * {@code UNAVAILABLE}. Thread-safe if {@code connections} is.
   *
   * @param effects the effect table, never {@code null}
   * @param connections where a call without Idem's transaction gets its connection (closed after the
   *     insert), never {@code null}
   * @return the handler, for {@link ServerCalls#asyncUnaryCall}
   */
  public static ServerCalls.UnaryMethod<Struct, Struct> createHandler(EffectTable effects, DataSource connections) {
    Objects.requireNonNull(effects, "effects");
    Objects.requireNonNull(connections, "connections");
    return (Struct request, StreamObserver<Struct> answer) -> {
      String tag = request.getFieldsOrThrow("tag").getStringValue();
      String payload = "{\"value\":" + (long) request.getFieldsOrThrow("value").getNumberValue() + "}";
      long id;
      try {
        Optional<Connection> transaction = GrpcTransactions.connection();
        if (transaction.isPresent()) {
          id = effects.insert(transaction.get(), tag, payload); // commits with the stored answer
        } else {
          try (Connection c = connections.getConnection()) {
            id = effects.insert(c, tag, payload); // auto-commit: committed here
          }
        }
      } catch (SQLException e) {
        answer.onError(Status.UNAVAILABLE.withDescription("insert failed: " + e.getMessage()).asRuntimeException());
        return;
      }
      answer.onNext(answer(id));
      answer.onCompleted();
    };
  }

  /** A Netty server on a loopback port with the handler (behind Idem or not) and a channel to it. */
  private final class Endpoint implements AutoCloseable {

    final AtomicInteger arrivals = new AtomicInteger();
    final AtomicBoolean loseNextAnswer = new AtomicBoolean();
    final Queue<Long> lostIds = new ConcurrentLinkedQueue<>();
    private final Server server;
    private final ManagedChannel channel;

    Endpoint(IdempotencyServerInterceptor idem) throws IOException {
      ServerServiceDefinition notes = ServerServiceDefinition.builder(SERVICE)
          .addMethod(CREATE, ServerCalls.asyncUnaryCall(createHandler(effects, target.dataSource())))
          .build();
      // the last interceptor is outermost: the loss happens outside Idem, after its commit
      ServerServiceDefinition served = idem == null
          ? ServerInterceptors.intercept(notes, losesAnswer(), counts())
          : ServerInterceptors.intercept(notes, idem, losesAnswer(), counts());
      server = NettyServerBuilder
          .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), InsecureServerCredentials.create())
          .addService(served)
          .build()
          .start();
      channel = NettyChannelBuilder
          .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort()),
              InsecureChannelCredentials.create())
          .intercept(IdempotencyClientInterceptor.create())
          .defaultServiceConfig(retryPolicy())
          .enableRetry()
          .build();
    }

    long create(String key, Struct request) {
      CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(60, TimeUnit.SECONDS);
      if (key != null) {
        options = options.withOption(IdempotencyKeys.CALL_OPTION, key);
      }
      return idOf(ClientCalls.blockingUnaryCall(channel, CREATE, options, request));
    }

    private ServerInterceptor counts() {
      return new ServerInterceptor() {
        @Override
        public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
            ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
          arrivals.incrementAndGet();
          return next.startCall(call, headers);
        }
      };
    }

    /** When armed, the next call's answer never leaves: dropped after the commit, closed UNAVAILABLE. */
    private ServerInterceptor losesAnswer() {
      return new ServerInterceptor() {
        @Override
        public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
            ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
          if (!loseNextAnswer.getAndSet(false)) {
            return next.startCall(call, headers);
          }
          return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void sendHeaders(Metadata responseHeaders) {
              // lost: a client that saw response headers would not retry
            }

            @Override
            public void sendMessage(RespT message) {
              if (message instanceof Struct) {
                lostIds.add(idOf((Struct) message));
              }
            }

            @Override
            public void close(Status status, Metadata trailers) {
              super.close(Status.UNAVAILABLE.withDescription("idem lab: the answer was lost after the commit"),
                  new Metadata());
            }
          }, headers);
        }
      };
    }

    @Override
    public void close() throws InterruptedException {
      channel.shutdownNow();
      server.shutdownNow();
      channel.awaitTermination(10, TimeUnit.SECONDS);
      server.awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  /** The channel's service config: retry {@code UNAVAILABLE} up to 3 attempts, 20 to 100 ms apart. */
  private static Map<String, ?> retryPolicy() {
    return Map.of("methodConfig", List.of(Map.of(
        "name", List.of(Map.of("service", SERVICE)),
        "retryPolicy", Map.of(
            "maxAttempts", 3.0,
            "initialBackoff", "0.02s",
            "maxBackoff", "0.1s",
            "backoffMultiplier", 2.0,
            "retryableStatusCodes", List.of("UNAVAILABLE")))));
  }

  /** Answers of one scenario run, as the callers saw them. */
  private static final class Tally {
    int rejected;
    int errors;
    String firstError;
    final List<Long> ids = new ArrayList<>();

    synchronized void error(Throwable e) {
      errors++;
      if (firstError == null) {
        firstError = e instanceof StatusRuntimeException
            ? ((StatusRuntimeException) e).getStatus().toString()
            : e.getClass().getSimpleName() + ": " + e.getMessage();
      }
    }
  }
}
