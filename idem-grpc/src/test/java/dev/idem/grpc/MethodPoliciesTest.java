package dev.idem.grpc;

import static dev.idem.grpc.TestService.note;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyEngine;
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
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * Policies per method: {@code Create} in transactional mode with a key required, {@code Charge} in
 * lease mode (a call to another system, outside any transaction) with a key optional, on one
 * interceptor; and the start-up refusals of policies that cannot hold.
 */
class MethodPoliciesTest {

  @TempDir Path dir;
  SQLiteDataSource dataSource;
  TransactionalIdempotency transactional;
  LeaseIdempotency lease;
  /** For each Create and Charge run: whether it ran inside Idem's transaction. */
  final Queue<String> runs = new ConcurrentLinkedQueue<>();

  @BeforeEach
  void setUp() throws SQLException {
    dataSource = new SQLiteDataSource();
    dataSource.setUrl("jdbc:sqlite:" + dir.resolve("notes.db"));
    JdbcIdempotency keys = JdbcIdempotency.builder().createSchema(true).build();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      keys.createSchema(c);
      st.execute("CREATE TABLE notes (text TEXT NOT NULL)");
    }
    transactional = TransactionalIdempotency.onDataSource(keys, dataSource, IdemListener.NONE);
    lease = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
  }

  private IdempotencyServerInterceptor.Builder twoModes(IdempotencyEngine fallback) {
    return IdempotencyServerInterceptor.builder(fallback)
        .methodPolicy(TestService.CREATE.getFullMethodName(), transactional, true)
        .methodPolicy(TestService.CHARGE.getFullMethodName(), lease, false);
  }

  private void wire(TestService service) {
    service.sideEffect = request -> {
      runs.add("create " + (GrpcTransactions.connection().isPresent() ? "in a transaction" : "outside"));
      GrpcTransactions.connection().ifPresent(c -> {
        try (PreparedStatement insert = c.prepareStatement("INSERT INTO notes (text) VALUES (?)")) {
          insert.setString(1, request.getFieldsOrThrow("text").getStringValue());
          insert.executeUpdate();
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      });
    };
    service.chargeEffect = request -> runs.add("charge " + (GrpcTransactions.connection().isPresent() ? "in a transaction" : "outside"));
  }

  @Test
  void eachMethodRunsOnItsOwnEngineWithItsOwnKeyRequirement() throws Exception {
    IdempotencyEngine unused = LeaseIdempotency.builder(new InMemoryLeaseStore()).build();
    try (TestService service = new TestService(twoModes(unused).build(), null, TestService.dropsKeyNone())) {
      wire(service);
      TestService.Stub keyed = IdempotencyKeys.withKey(service.stub(), "k-1");

      assertThat(keyed.create(note("buy milk")).getValue()).isEqualTo("note-1");
      assertThat(keyed.create(note("buy milk")).getValue()).isEqualTo("note-1"); // replayed
      assertThat(keyed.charge(note("buy milk")).getValue()).isEqualTo("charge-1"); // same key, another operation
      assertThat(keyed.charge(note("buy milk")).getValue()).isEqualTo("charge-1"); // replayed

      assertThat(runs).containsExactly("create in a transaction", "charge outside");
      assertThat(notes()).isEqualTo(1);
      try (Connection c = dataSource.getConnection()) { // Create's key is in the key table, Charge's is not
        assertThat(transactional.keys().status(c, dev.idem.core.Scope.of("anonymous", TestService.CREATE.getFullMethodName()),
            dev.idem.core.IdempotencyKey.of("k-1"))).isInstanceOf(dev.idem.core.KeyStatus.Completed.class);
        assertThat(transactional.keys().status(c, dev.idem.core.Scope.of("anonymous", TestService.CHARGE.getFullMethodName()),
            dev.idem.core.IdempotencyKey.of("k-1"))).isInstanceOf(dev.idem.core.KeyStatus.Absent.class);
      }

      // Create requires a key; Charge lets a call without one through, unprotected
      assertThatThrownBy(() -> TestService.noKey(service).create(note("no key")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(TestService.reason(e)).isEqualTo("KEY_MISSING");
          });
      assertThat(TestService.noKey(service).charge(note("no key")).getValue()).isEqualTo("charge-2");
      assertThat(TestService.noKey(service).charge(note("no key")).getValue()).isEqualTo("charge-3");
      assertThat(service.runs).hasValue(1);
    }
  }

  @Test
  void aMethodsOwnPolicyWinsOverItsServicesAndTheServicesOverTheDefault() throws Exception {
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(lease)
        .methodPolicy(TestService.SERVICE + "/*", lease, true) // every method: key required
        .methodPolicy(TestService.CHARGE.getFullMethodName(), lease, false) // but Charge's is optional
        .build();
    try (TestService service = new TestService(idem, null, TestService.dropsKeyNone())) {
      assertThatThrownBy(() -> TestService.noKey(service).create(note("no key")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(TestService.reason(e)).isEqualTo("KEY_MISSING"));
      assertThat(TestService.noKey(service).charge(note("no key")).getValue()).isEqualTo("charge-1");
    }
  }

  @Test
  void aMethodWithAPolicyIsProtectedWhenProtectNamesOthersOnly() throws Exception {
    IdempotencyServerInterceptor idem = IdempotencyServerInterceptor.builder(lease)
        .protect(TestService.CREATE)
        .methodPolicy(TestService.CHARGE.getFullMethodName(), lease, true)
        .build();
    try (TestService service = new TestService(idem, null, TestService.dropsKeyNone())) {
      TestService.Stub keyed = IdempotencyKeys.withKey(service.stub(), "k-2");
      keyed.charge(note("a"));
      keyed.charge(note("a"));
      assertThat(service.charges).hasValue(1);
      assertThatThrownBy(() -> TestService.noKey(service).charge(note("no key")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(TestService.reason(e)).isEqualTo("KEY_MISSING"));
    }
  }

  @Test
  void malformedAndRepeatedPatternsAreRefusedWhenConfigured() {
    for (String bad : new String[] {"Create", "/Create", "idem.test.Notes/", "idem.test.*/Create", "idem.test.Notes/Cr*",
        "idem.test.Notes/Create/x", " idem.test.Notes/Create", "*"}) {
      assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(lease).methodPolicy(bad, lease, true))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("package.Service/Method");
    }
    IdempotencyServerInterceptor.Builder b = IdempotencyServerInterceptor.builder(lease)
        .methodPolicy("idem.test.Notes/Create", lease, true);
    assertThatThrownBy(() -> b.methodPolicy("idem.test.Notes/Create", transactional, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("given twice");
  }

  @Test
  void aPolicyForAStreamingMethodOrForNoMethodOfTheServicesIsRefusedAtBuild() {
    assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(lease)
        .methodPolicy(TestService.WATCH.getFullMethodName(), lease, true)
        .services(StreamingMethodsTest.notes())
        .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idem.test.Notes/Watch is a SERVER_STREAMING method")
        .hasMessageContaining("only unary methods are protected");
    assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(lease)
        .methodPolicy("idem.test.Notes/Crate", lease, true)
        .services(StreamingMethodsTest.notes())
        .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("\"idem.test.Notes/Crate\" names no method of the services served (idem.test.Notes)");
    assertThatThrownBy(() -> IdempotencyServerInterceptor.builder(lease)
        .methodPolicy("idem.test.Orders/*", lease, true)
        .services(StreamingMethodsTest.notes())
        .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("\"idem.test.Orders/*\" names no unary method");
    // a service pattern over a service with unary and streaming methods: fine, the streaming ones pass through
    assertThat(IdempotencyServerInterceptor.builder(lease)
        .methodPolicy(TestService.SERVICE + "/*", lease, true)
        .services(StreamingMethodsTest.notes())
        .build().unprotectedStreamingMethods()).hasSize(2);
  }

  private long notes() {
    return TestService.notes(dataSource);
  }

}
