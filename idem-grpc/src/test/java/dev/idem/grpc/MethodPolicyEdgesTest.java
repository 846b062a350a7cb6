package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.idem.core.IdemListener;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * Method policies at their edges: a builder used again after {@link
 * IdempotencyServerInterceptor.Builder#build()}, a method's key from its request field under a
 * policy, and concurrent duplicates on a transactional and a lease policy of one server.
 */
class MethodPolicyEdgesTest {

  @TempDir Path dir;
  SQLiteDataSource dataSource;
  TransactionalIdempotency transactional;
  LeaseIdempotency lease;

  @BeforeEach
  void setUp() throws SQLException {
    dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("notes.db") + "?busy_timeout=20000");
    // Claim-first: this class counts handler runs, and under key-last (the default) a racing
    // duplicate runs its handler too before its rollback.
    JdbcIdempotency keys = JdbcIdempotency.builder().createSchema(true).strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      keys.createSchema(c);
      st.execute("PRAGMA journal_mode=WAL");
      st.execute("CREATE TABLE notes (text TEXT NOT NULL)");
    }
    transactional = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    lease = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
  }

  @Test
  void aBuilderGivenAPolicyAfterBuildNeitherThrowsNorChangesTheInterceptorItBuilt() throws Exception {
    IdempotencyServerInterceptor.Builder builder = IdempotencyServerInterceptor.builder(lease)
        .methodPolicy(TestService.CREATE.getFullMethodName(), lease, true);
    IdempotencyServerInterceptor first = builder.build();
    builder.methodPolicy(TestService.CHARGE.getFullMethodName(), lease, true); // was: UnsupportedOperationException
    IdempotencyServerInterceptor second = builder.build();
    try (TestService service = new TestService(first, null, TestService.dropsKeyNone())) {
      assertThat(TestService.noKey(service).charge(note("a")).getValue()).isEqualTo("charge-1"); // the first has no Charge policy
    }
    try (TestService service = new TestService(second, null, TestService.dropsKeyNone())) {
      assertThatThrownBy(() -> TestService.noKey(service).charge(note("a")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(TestService.reason(e)).isEqualTo("KEY_MISSING"));
    }
  }

  @Test
  void aRequestFieldKeyOnAMethodWithAPolicyIsUsedAndItsAbsenceRefused() throws Exception {
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(lease)
        .requestKey(TestService.CREATE, (Struct r) -> r.getFieldsOrDefault("request_id", Value.getDefaultInstance()).getStringValue())
        .methodPolicy(TestService.CREATE.getFullMethodName(), transactional, true)
        .build();
    try (TestService service = new TestService(idem, null, TestService.dropsKeyNone())) {
      Struct withId = note("a").toBuilder().putFields("request_id", Value.newBuilder().setStringValue("r-1").build()).build();
      assertThat(TestService.noKey(service).create(withId).getValue()).isEqualTo("note-1");
      assertThat(TestService.noKey(service).create(withId).getValue()).isEqualTo("note-1");
      assertThatThrownBy(() -> TestService.noKey(service).create(note("b")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(TestService.reason(e)).isEqualTo("KEY_MISSING"));
      assertThat(service.runs).hasValue(1);
    }
  }

  @Test
  void concurrentDuplicatesOnATransactionalAndALeasePolicyRunEachEffectOnce() throws Exception {
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(lease)
        .methodPolicy(TestService.CREATE.getFullMethodName(), transactional, true)
        .methodPolicy(TestService.CHARGE.getFullMethodName(), lease, true)
        .build();
    int copies = 6;
    try (TestService service = new TestService(idem, null)) {
      service.sideEffect = request -> GrpcTransactions.connection().ifPresent(c -> {
        try (PreparedStatement insert = c.prepareStatement("INSERT INTO notes (text) VALUES (?)")) {
          insert.setString(1, "x");
          insert.executeUpdate();
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
      TestService.Stub keyed = IdempotencyKeys.withKey(service.stub(), "same-key");
      CyclicBarrier start = new CyclicBarrier(2 * copies);
      ExecutorService pool = Executors.newFixedThreadPool(2 * copies);
      List<Future<String>> answers = new ArrayList<>();
      try {
        for (int i = 0; i < 2 * copies; i++) {
          boolean create = i % 2 == 0;
          answers.add(pool.submit(() -> {
            start.await();
            try {
              return create ? keyed.create(note("x")).getValue() : keyed.charge(note("x")).getValue();
            } catch (StatusRuntimeException e) {
              return e.getStatus().getCode() + " " + TestService.reason(e);
            }
          }));
        }
        List<String> got = new ArrayList<>();
        for (Future<String> f : answers) {
          got.add(f.get(60, TimeUnit.SECONDS));
        }
        assertThat(got).allSatisfy(a -> assertThat(a).isIn("note-1", "charge-1", Status.Code.UNAVAILABLE + " IN_PROGRESS"));
        assertThat(got).contains("note-1", "charge-1");
      } finally {
        pool.shutdownNow();
      }
      assertThat(service.runs).as("Create runs").hasValue(1);
      assertThat(service.charges).as("Charge runs").hasValue(1);
      assertThat(notes()).isEqualTo(1);
    }
  }

  private long notes() {
    return TestService.notes(dataSource);
  }

}
