package dev.idem.testkit;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.IdemListener;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.DataSourceTransactionRunner;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.jdbc.EffectTable;
import dev.idem.lab.jdbc.JdbcTarget;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * The transactional-mode contract that every JDBC backend passes, in contracts of one job each.
 * They all extend this class and share its one hook, {@link #target()}: the database under test
 * and the write order. A store's test runs them all by extending {@link AllTransactionalContracts},
 * which holds one {@code @Nested} class per contract (JUnit 5), so that each database is named
 * once; the tests are never copied per backend.
 *
 * <pre>{@code
 * class PostgresTransactionalContractTest extends AllTransactionalContracts {
 *   @RegisterExtension static final TestDatabase db = TestDatabase.postgres();
 *
 *   @Override
 *   protected TransactionalTarget target() {
 *     return TransactionalTarget.of(db.target());
 *   }
 * }
 * }</pre>
 *
 * <ul>
 *   <li>{@link ExecuteContract}: one caller's {@code execute} on its own connection: runs once,
 *       replays byte for byte, tells keys, scopes and payloads apart, leaves auto-commit as it was.
 *   <li>{@link FailureContract}: failures and rollbacks: failure answers, exceptions, caught SQL
 *       errors, an effect that commits on its own, an orphaned claim.
 *   <li>{@link ConcurrencyContract}: racing duplicates and racing distinct keys, under each
 *       isolation level, with deadlocking effects, inside callers' transactions.
 *   <li>{@link KeyTableContract}: the key table: creation (also inside a rolled-back transaction
 *       and from the shipped schema file), a loose key comparison refused, purge.
 *   <li>{@link KeyStatusContract}: reading a key's status without waiting for its claim.
 *   <li>{@link ResponseProtectionContract}: responses protected at rest, key rotation, refusals.
 *   <li>{@link RunnerContract}: {@link dev.idem.jdbc.TransactionalIdempotency} opening each
 *       attempt's transaction on a {@link dev.idem.jdbc.TransactionRunner}, as the servlet filter
 *       and the Spring starter run it.
 *   <li>{@link InProgressContract}: duplicates of a running attempt: bounded claims, waiting
 *       duplicates, the session's lock wait.
 * </ul>
 *
 * <p>Every test asserts the stored state (effects counted with SQL, records read back), not only
 * the responses. Each test uses its own tables, named with a random suffix, and drops them. A new
 * instance per test (JUnit's default); not thread-safe.
 */
public abstract class TransactionalContract {

  // the running test's fixture: its tables' random suffix, its effect table and key table (the
  // engine), and how many times its effects ran
  String suffix;
  EffectTable effects;
  JdbcIdempotency idem;
  final AtomicInteger invocations = new AtomicInteger();

  /** Only the contracts of this package extend this class: a store's test extends those. */
  TransactionalContract() {}

  /**
   * The one thing a store's test says: the database under test and the write order to run the
   * contract with. Called before and after every test; return the same target each time.
   *
   * @return the database under test (its connections wait for locks, see {@link JdbcTarget}) and
   *     the write order, never {@code null}
   */
  protected abstract TransactionalTarget target();

  /** @return the database of {@link #target()} */
  final JdbcTarget database() {
    return target().database();
  }

  /** @return the write order of {@link #target()} */
  final JdbcIdempotency.Strategy strategy() {
    return target().strategy();
  }

  /**
   * Names the target in every failure: one contract class runs on every database (as a nested class
   * of {@link AllTransactionalContracts}, whose name the test report shows), so a failure says
   * where it ran in a suppressed exception of its own.
   */
  @RegisterExtension
  final TestExecutionExceptionHandler namesTheTarget = (context, failure) -> {
    failure.addSuppressed(new AssertionError("the contract ran on " + target()));
    throw failure;
  };

  @BeforeEach
  final void createTables() throws SQLException {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    effects = new EffectTable("effects_" + suffix);
    idem = builder().table("keys_" + suffix).build();
    try (Connection c = database().open()) {
      effects.recreate(c);
    }
  }

  @AfterEach
  final void dropTables() throws SQLException {
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + effects.name());
      st.execute("DROP TABLE IF EXISTS " + idem.table());
    }
  }

  JdbcIdempotency.Builder builder() {
    return JdbcIdempotency.builder().strategy(strategy());
  }

  /** Registers an e-mail address; a taken one is the handler's own answer, 409. */
  static StoredResponse register(Connection conn, String users, String email) {
    try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + users + " (email) VALUES (?)")) {
      ps.setString(1, email);
      ps.executeUpdate();
      return StoredResponse.of(201, "registered");
    } catch (SQLException e) {
      return StoredResponse.of(409, "email already registered");
    }
  }

  /** What each racer does on a connection of its own. */
  @FunctionalInterface
  interface Racer {
    Outcome run(Connection c) throws Exception;
  }

  List<Outcome> race(int racers, Racer racer) throws Exception {
    return together(racers, start -> {
      try (Connection c = database().open()) {
        start.await(30, TimeUnit.SECONDS);
        return racer.run(c);
      }
    });
  }

  /** One racer of {@link #together}: it calls {@code start.await} when it is ready, then races. */
  @FunctionalInterface
  interface Racing<T> {
    T run(CyclicBarrier start) throws Exception;
  }

  /** Runs {@code racers} threads that meet at one barrier, and waits for them all (2 minutes at most each). */
  static <T> List<T> together(int racers, Racing<T> racing) throws Exception {
    CyclicBarrier barrier = new CyclicBarrier(racers);
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        futures.add(pool.submit(() -> racing.run(barrier)));
      }
      List<T> results = new ArrayList<>();
      for (Future<T> f : futures) {
        results.add(f.get(120, TimeUnit.SECONDS));
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Transactional mode as the servlet filter and the Spring starter run it: {@link
   * TransactionalIdempotency} opening each attempt's transaction on a runner, in the contract's order.
   */
  TransactionalIdempotency runnerEngine() {
    JdbcIdempotency keys = builder().table(idem.table()).build();
    try (Connection c = database().open()) {
      keys.createSchema(c); // before the attempts, as the starter does at start-up
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return new TransactionalIdempotency(keys, new DataSourceTransactionRunner(database().dataSource()), IdemListener.NONE);
  }

  /** An effect that inserts its row and answers 201 with its id, after {@code pauseMillis}. */
  Effect creating(String payload, long pauseMillis) {
    return ctx -> {
      invocations.incrementAndGet();
      long id = effects.insert(ctx.connection(), "t", payload);
      if (pauseMillis > 0) {
        Thread.sleep(pauseMillis);
      }
      return StoredResponse.builder(201).header("Location", "/things/" + id).body("{\"id\":" + id + "}").build();
    };
  }

  static String body(AttemptResult result) {
    return result.outcome().orElseThrow(() -> new AssertionError("no outcome: " + result)).response().bodyAsString();
  }

  long recordCountNow() throws SQLException {
    try (Connection c = database().open()) {
      return recordCount(c);
    }
  }

  static IdempotentRequest request(String principal, String key, String json) {
    return request(Scope.of(principal, "POST /things"), key, json);
  }

  static IdempotentRequest request(Scope scope, String key, String json) {
    return new IdempotentRequest(scope, IdempotencyKey.of(key), Fingerprint.ofJson(json.getBytes(StandardCharsets.UTF_8)));
  }

  /** A request's scope and key, with spaces and characters outside printable ASCII shown as U+XXXX. */
  static String describe(IdempotentRequest r) {
    return "principal " + show(r.scope().principal()) + ", operation " + show(r.scope().operation()) + ", key " + show(r.key().value());
  }

  static String show(String value) {
    StringBuilder b = new StringBuilder("'");
    value.codePoints().forEach(cp -> b.append(cp > 0x20 && cp < 0x7F ? Character.toString(cp) : String.format("<U+%04X>", cp)));
    return b.append('\'').toString();
  }

  Outcome create(Connection c, IdempotentRequest request, String payload) {
    return idem.execute(c, request, connCtx -> {
      Connection conn = connCtx.connection();
      invocations.incrementAndGet();
      long id = effects.insert(conn, "t", payload);
      return StoredResponse.builder(201).header("Location", "/things/" + id).body("{\"id\":" + id + "}").build();
    });
  }

  static long idOf(Outcome outcome) {
    String body = outcome.response().bodyAsString();
    return Long.parseLong(body.replaceAll("[^0-9]", ""));
  }

  long effectCount() throws SQLException {
    try (Connection c = database().open()) {
      return effects.count(c, "t");
    }
  }

  long recordCount(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + idem.table());
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
