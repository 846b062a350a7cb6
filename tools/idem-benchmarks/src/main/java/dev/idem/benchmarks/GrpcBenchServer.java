package dev.idem.benchmarks;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.core.IdemListener;
import dev.idem.core.LeaseIdempotency;
import dev.idem.grpc.IdempotencyKeys;
import dev.idem.grpc.IdempotencyServerInterceptor;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.jdbc.EffectTable;
import dev.idem.lab.GrpcLab;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The server of the gRPC benchmark ({@link GrpcLoad}), one variant per JVM so that the load driver
 * reads this process's CPU alone: {@code java -cp benchmarks.jar dev.idem.benchmarks.GrpcBenchServer
 * <variant> <jdbc-url> <port>}. It serves {@link GrpcLab#CREATE} ({@code idem.lab.Notes/Create}) on
 * a Netty server bound to the loopback address and {@code port}, on a HikariCP pool (its defaults:
 * 10 connections) to {@code jdbc-url}, whose tables it creates, and runs until it is killed.
 *
 * <ul>
 *   <li>{@code without-idem}: {@link GrpcLab#createHandler}, no interceptor: one auto-commit INSERT
 *       per call.
 *   <li>{@code floor}: the idempotent create written by hand ({@link #floor}): one primary-key read
 *       of {@code floor_keys}; if absent one transaction, the effect and then the key row with its
 *       answer (key last, {@code ON CONFLICT DO NOTHING}), as the HTTP benchmark's floor.
 *   <li>{@code idem-transactional}: the same handler behind {@link IdempotencyServerInterceptor} on
 *       {@link TransactionalIdempotency} (key table with {@link JdbcIdempotency.Strategy#KEY_LAST},
 *       the Spring starter's default); the handler writes on Idem's connection.
 *   <li>{@code idem-lease}: behind the interceptor on {@link LeaseIdempotency} (fail-fast) over
 *       {@link JdbcLeaseStore}: claim, effect in auto-commit, completion.
 * </ul>
 *
 * Keyed variants take the key from the {@value IdempotencyKeys#DEFAULT_HEADER} metadata entry and
 * require it. Prints {@code listening on <port>} once the server is bound.
 */
public final class GrpcBenchServer {

  /** The variants, as the first argument names them. */
  static final List<String> VARIANTS = List.of("without-idem", "floor", "idem-transactional", "idem-lease");

  private static final EffectTable NOTES = new EffectTable("bench_notes");

  private static final Context.Key<String> FLOOR_KEY = Context.key("bench-floor-key");

  private GrpcBenchServer() {}

  /**
   * @param args the variant (one of {@link #VARIANTS}), the JDBC URL of the variant's own database,
   *     the TCP port to bind on the loopback address
   * @throws Exception if the database cannot be set up or the port cannot be bound
   */
  public static void main(String[] args) throws Exception {
    if (args.length != 3 || !VARIANTS.contains(args[0])) {
      System.err.println("usage: GrpcBenchServer " + String.join("|", VARIANTS) + " <jdbc-url> <port>");
      System.exit(2);
    }
    String variant = args[0];
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(args[1]);
    config.setPoolName("grpc-bench-" + variant);
    HikariDataSource pool = new HikariDataSource(config);
    boolean postgres;
    try (Connection c = pool.getConnection()) {
      postgres = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
      NOTES.recreate(c);
    }
    ServerServiceDefinition notes = ServerServiceDefinition.builder(GrpcLab.SERVICE)
        .addMethod(GrpcLab.CREATE, ServerCalls.asyncUnaryCall(variant.equals("floor")
            ? new Floor(pool, postgres)::create : GrpcLab.createHandler(NOTES, pool)))
        .build();
    ServerServiceDefinition served = switch (variant) {
      case "without-idem" -> notes;
      case "floor" -> ServerInterceptors.intercept(notes, floorKey());
      case "idem-transactional" -> {
        JdbcIdempotency keys = JdbcIdempotency.builder().strategy(JdbcIdempotency.Strategy.KEY_LAST).build();
        try (Connection c = pool.getConnection()) {
          keys.createSchema(c);
        }
        yield ServerInterceptors.intercept(notes, IdempotencyServerInterceptor.builder(
            TransactionalIdempotency.onDataSource(keys, pool, IdemListener.NONE)).principal("bench").keyRequired(true).build());
      }
      case "idem-lease" -> {
        JdbcLeaseStore store = JdbcLeaseStore.builder(pool).build();
        try (Connection c = pool.getConnection()) {
          store.createSchema(c);
        }
        yield ServerInterceptors.intercept(notes, IdempotencyServerInterceptor.builder(
            LeaseIdempotency.builder(store).build()).principal("bench").keyRequired(true).build());
      }
      default -> throw new IllegalArgumentException(variant);
    };
    Server server = NettyServerBuilder
        .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(args[2])),
            InsecureServerCredentials.create())
        .addService(served)
        .build()
        .start();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.shutdownNow();
      pool.close();
    }, "grpc-bench-stop"));
    System.out.println("listening on " + server.getPort());
    server.awaitTermination();
  }

  /** Puts the call's {@value IdempotencyKeys#DEFAULT_HEADER} entry in its context for the floor's handler. */
  private static ServerInterceptor floorKey() {
    return new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
          ServerCallHandler<ReqT, RespT> next) {
        return Contexts.interceptCall(Context.current().withValue(FLOOR_KEY, headers.get(IdempotencyKeys.HEADER)), call, headers,
            next);
      }
    };
  }

  /**
   * The floor: the idempotent create an experienced developer writes by hand for this method. No
   * scope, no expiry, no in-progress state: not a pattern for production code. Thread-safe.
   */
  private static final class Floor {

    private final HikariDataSource pool;
    private final String insertKey;

    Floor(HikariDataSource pool, boolean postgres) throws SQLException {
      this.pool = pool;
      try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
        String bytes = postgres ? "BYTEA" : "BLOB";
        st.execute("CREATE TABLE IF NOT EXISTS floor_keys (idem_key VARCHAR(255) PRIMARY KEY, fingerprint " + bytes
            + " NOT NULL, answer " + bytes + " NOT NULL)");
      }
      // PostgreSQL and SQLite (3.24 and later) both have ON CONFLICT DO NOTHING
      this.insertKey = "INSERT INTO floor_keys (idem_key, fingerprint, answer) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";
    }

    void create(Struct request, StreamObserver<Struct> answer) {
      String key = FLOOR_KEY.get();
      if (key == null || key.isEmpty() || key.length() > 255) {
        answer.onError(Status.INVALID_ARGUMENT.withDescription("the idempotency-key must have 1 to 255 characters")
            .asRuntimeException());
        return;
      }
      try {
        byte[] fingerprint = sha256(request);
        Stored earlier = find(key);
        if (earlier != null) {
          replay(earlier, fingerprint, answer);
          return;
        }
        String tag = request.getFieldsOrThrow("tag").getStringValue();
        String payload = "{\"value\":" + (long) request.getFieldsOrThrow("value").getNumberValue() + "}";
        Struct created;
        try (Connection c = pool.getConnection()) {
          c.setAutoCommit(false);
          try {
            created = GrpcLab.answer(NOTES.insert(c, tag, payload));
            int inserted;
            try (PreparedStatement ps = c.prepareStatement(insertKey)) {
              ps.setString(1, key);
              ps.setBytes(2, fingerprint);
              ps.setBytes(3, created.toByteArray());
              inserted = ps.executeUpdate();
            }
            if (inserted == 0) {
              c.rollback(); // a concurrent call with this key committed first: undo our effect
              created = null;
            } else {
              c.commit();
            }
          } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
          } finally {
            c.setAutoCommit(true);
          }
        }
        if (created == null) {
          Stored winner = find(key);
          if (winner == null) {
            answer.onError(Status.ABORTED.withDescription("a call with this key did not commit; retry").asRuntimeException());
          } else {
            replay(winner, fingerprint, answer);
          }
          return;
        }
        answer.onNext(created);
        answer.onCompleted();
      } catch (SQLException | InvalidProtocolBufferException e) {
        answer.onError(Status.UNAVAILABLE.withDescription("floor: " + e.getMessage()).asRuntimeException());
      }
    }

    private record Stored(byte[] fingerprint, byte[] answer) {}

    private @Nullable Stored find(String key) throws SQLException {
      try (Connection c = pool.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT fingerprint, answer FROM floor_keys WHERE idem_key = ?")) {
        ps.setString(1, key);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() ? new Stored(rs.getBytes(1), rs.getBytes(2)) : null;
        }
      }
    }

    private static void replay(Stored stored, byte[] fingerprint, StreamObserver<Struct> answer)
        throws InvalidProtocolBufferException {
      if (!MessageDigest.isEqual(stored.fingerprint(), fingerprint)) {
        answer.onError(Status.FAILED_PRECONDITION.withDescription("this key was used with another request").asRuntimeException());
        return;
      }
      answer.onNext(Struct.parseFrom(stored.answer()));
      answer.onCompleted();
    }

    /** SHA-256 of the request's deterministic serialization (map entries in key order). */
    private static byte[] sha256(Struct request) {
      try {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(request.getSerializedSize());
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        out.useDeterministicSerialization();
        request.writeTo(out);
        out.flush();
        return MessageDigest.getInstance("SHA-256").digest(bytes.toByteArray());
      } catch (IOException | NoSuchAlgorithmException e) {
        throw new IllegalStateException("cannot fingerprint the request", e);
      }
    }
  }
}
