package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Struct;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * Transactional mode on SQLite: the handler writes on the transaction's connection from {@link
 * GrpcTransactions#connection()}, and its row commits with the stored answer or rolls back with it.
 */
class TransactionalModeTest {

  @TempDir Path dir;
  SQLiteDataSource dataSource;
  IdempotencyEngine engine;

  @BeforeEach
  void setUp() throws SQLException {
    dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("notes.db"));
    JdbcIdempotency keys = JdbcIdempotency.builder().createSchema(true).build();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      keys.createSchema(c);
      st.execute("CREATE TABLE notes (text TEXT NOT NULL)");
    }
    engine = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
  }

  private static void insert(Struct request) {
    Connection c = GrpcTransactions.connection().orElseThrow(() -> new IllegalStateException("no transaction"));
    try (PreparedStatement insert = c.prepareStatement("INSERT INTO notes (text) VALUES (?)")) {
      insert.setString(1, request.getFieldsOrThrow("text").getStringValue());
      insert.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private long notes() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM notes")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void theHandlersWriteCommitsWithTheStoredAnswerAndARetryIsReplayed() throws Exception {
    try (TestService service = new TestService(IdempotencyServerInterceptor.builder(engine).build())) {
      service.sideEffect = TransactionalModeTest::insert;
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "t-1");

      assertThat(stub.create(note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(stub.create(note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      assertThat(notes()).isEqualTo(1);
    }
  }

  @Test
  void aFailedHandlerRollsItsWriteBackWithTheKey() throws Exception {
    try (TestService service = new TestService(IdempotencyServerInterceptor.builder(engine).build())) {
      service.sideEffect = TransactionalModeTest::insert;
      service.failingRuns = 1;
      TestService.Stub stub = IdempotencyKeys.withKey(service.stub(), "t-2");

      assertThatThrownBy(() -> stub.create(note("buy milk")))
          .isInstanceOfSatisfying(StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL));
      assertThat(notes()).isZero();
      assertThat(stub.create(note("buy milk")).getValue()).isEqualTo("note-2");
      assertThat(notes()).isEqualTo(1);
    }
  }

  @Test
  void aLostResponseRetriedByTheChannelWritesOnce() throws Exception {
    AtomicBoolean lost = new AtomicBoolean();
    ServerInterceptor losesFirstAnswer = new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
          ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        if (lost.getAndSet(true)) {
          return next.startCall(call, headers);
        }
        return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
          @Override
          public void sendHeaders(Metadata headers) {}

          @Override
          public void sendMessage(RespT message) {}

          @Override
          public void close(Status status, Metadata trailers) {
            super.close(Status.UNAVAILABLE.withDescription("lost"), new Metadata());
          }
        }, headers);
      }
    };
    try (TestService service = new TestService(
        IdempotencyServerInterceptor.builder(engine).build(), TestService.retryPolicy(), losesFirstAnswer)) {
      service.sideEffect = TransactionalModeTest::insert;

      assertThat(service.stub().create(note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(service.runs).hasValue(1);
      assertThat(notes()).isEqualTo(1);
    }
  }

  @Test
  void inLeaseModeThereIsNoTransaction() throws Exception {
    IdempotencyEngine lease = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
    try (TestService service = new TestService(IdempotencyServerInterceptor.builder(lease).build())) {
      AtomicReference<Boolean> seen = new AtomicReference<>();
      service.sideEffect = request -> seen.set(GrpcTransactions.connection().isPresent());
      service.stub().create(note("a"));
      assertThat(seen.get()).isFalse();
    }
  }
}
