package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import dev.idem.core.IdemListener;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import io.grpc.CallOptions;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * A method whose policy is transactional, with a handler that answers from another thread it
 * carries the call's context to (as {@link GrpcTransactions} says it must): its write on the
 * transaction's connection commits with the key, once, and a retry is replayed.
 */
class TransactionalPolicyOtherThreadTest {

  @TempDir Path dir;

  @Test
  void aHandlerAnsweringFromAnotherThreadWritesInTheKeysTransaction() throws Exception {
    SQLiteDataSource dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("notes.db"));
    JdbcIdempotency keys = JdbcIdempotency.builder().createSchema(true).build();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      keys.createSchema(c);
      st.execute("CREATE TABLE notes (text TEXT NOT NULL)");
    }
    TransactionalIdempotency transactional = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(LeaseIdempotency.builder(new InMemoryLeaseStore()).build())
        .methodPolicy(TestService.CREATE.getFullMethodName(), transactional, true)
        .build();
    ExecutorService elsewhere = Executors.newSingleThreadExecutor();
    AtomicInteger runs = new AtomicInteger();
    ServerServiceDefinition service = ServerServiceDefinition.builder(TestService.SERVICE)
        .addMethod(TestService.CREATE, ServerCalls.asyncUnaryCall((request, observer) ->
            elsewhere.execute(Context.current().wrap(() -> {
              runs.incrementAndGet();
              Connection c = GrpcTransactions.connection().orElseThrow();
              try (PreparedStatement insert = c.prepareStatement("INSERT INTO notes (text) VALUES (?)")) {
                insert.setString(1, request.getFieldsOrThrow("text").getStringValue());
                insert.executeUpdate();
              } catch (SQLException e) {
                observer.onError(e);
                return;
              }
              observer.onNext(StringValue.of("note-" + runs.get()));
              observer.onCompleted();
            }))))
        .build();
    String name = InProcessServerBuilder.generateName();
    Server server = InProcessServerBuilder.forName(name).addService(ServerInterceptors.intercept(service, idem)).build().start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    try {
      Metadata headers = new Metadata();
      headers.put(IdempotencyKeys.HEADER, "k-1");
      io.grpc.Channel keyed = io.grpc.ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
      for (int i = 0; i < 2; i++) {
        assertThat(ClientCalls.blockingUnaryCall(keyed, TestService.CREATE, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
            note("buy milk")).getValue()).isEqualTo("note-1");
      }
      assertThat(runs).hasValue(1);
      try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT count(*) FROM notes")) {
        rs.next();
        assertThat(rs.getLong(1)).isEqualTo(1);
      }
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      elsewhere.shutdownNow();
    }
  }
}
