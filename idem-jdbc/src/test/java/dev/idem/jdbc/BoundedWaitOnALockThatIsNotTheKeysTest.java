package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The fault: under load, 4 of about 50,000 creates with fresh keys got a non-2xx answer in
 * transactional mode with the starter's 10 ms claim bound. On PostgreSQL that bound is {@code
 * lock_timeout}, which ends any lock wait of the key's statement, not only the wait for a
 * duplicate's row: the relation extension lock while concurrent inserts grow the table or an
 * index, a table lock of DDL. The give-up was answered "in progress" (409) for a key nobody else
 * had sent. Made deterministic here with a table lock held by another connection until the
 * attempt's bounded statement gave up (the engine asks for the connection of a second transaction,
 * the give-up's confirmation): the create must then run once, while a real duplicate is still
 * answered in progress quickly. (Released after a 30 ms sleep instead, the test failed now and then
 * on a loaded machine: the sleep and the release's round trip outlasted the confirmation's wait.)
 */
class BoundedWaitOnALockThatIsNotTheKeysTest {

  TestDb db;
  PGSimpleDataSource dataSource;

  @BeforeEach
  void setUp() throws Exception {
    db = TestDb.create(TestDb.Kind.POSTGRESQL);
    try (Connection c = db.open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE notes (id VARCHAR(64) PRIMARY KEY)");
      JdbcIdempotency.builder().build().createSchema(c);
      try (ResultSet rs = st.executeQuery("SELECT current_database()")) {
        rs.next();
        dataSource = new PGSimpleDataSource();
        dataSource.setURL("jdbc:postgresql://127.0.0.1:5432/" + rs.getString(1));
        dataSource.setUser("postgres");
      }
    }
  }

  @AfterEach
  void tearDown() throws Exception {
    db.drop();
  }

  private TransactionalIdempotency engine(JdbcIdempotency.Strategy strategy) {
    return engine(strategy, dataSource);
  }

  private static TransactionalIdempotency engine(JdbcIdempotency.Strategy strategy, DataSource source) {
    JdbcIdempotency keys = JdbcIdempotency.builder().strategy(strategy).claimLockWait(Duration.ofMillis(10)).build();
    return TransactionalIdempotency.onDataSource(keys, source, IdemListener.NONE);
  }

  /**
   * {@code dataSource}, except that once {@code armed}, the first connection asked for after one
   * of its connections rolled a transaction back (the give-up's) is given only after {@code
   * release} ran; {@code released} then counts it. (Key-last reads the key on a connection of its
   * own before its transaction: the connection count alone cannot tell the confirmation.)
   */
  private DataSource releasingAfterARollback(AtomicBoolean armed, AtomicInteger released, Callable<?> release) {
    AtomicBoolean rolledBack = new AtomicBoolean();
    ClassLoader loader = getClass().getClassLoader();
    return (DataSource) Proxy.newProxyInstance(loader, new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
      if (method.getName().equals("getConnection") && armed.get() && rolledBack.get() && released.get() == 0) {
        release.call();
        released.incrementAndGet();
      }
      Object result = invoke(method, dataSource, args);
      if (!(result instanceof Connection connection)) {
        return result;
      }
      return Proxy.newProxyInstance(loader, new Class<?>[] {Connection.class}, (p, m, a) -> {
        if (m.getName().equals("rollback") && (a == null || a.length == 0) && armed.get()) {
          rolledBack.set(true);
        }
        return invoke(m, connection, a);
      });
    });
  }

  private static Object invoke(Method method, Object target, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static IdempotentRequest request(String key) {
    return IdempotentRequest.ofJson("anonymous", "POST /notes", key, "{}".getBytes(StandardCharsets.UTF_8));
  }

  private static StoredResponse insert(Connection c, String id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO notes (id) VALUES (?)")) {
      ps.setString(1, id);
      ps.executeUpdate();
    }
    return StoredResponse.of(201, id);
  }

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aCreateWhoseBoundedKeyStatementMetATableLockRunsOnceTheLockIsGone(JdbcIdempotency.Strategy strategy) throws Exception {
    try (Connection holder = db.open(); Connection watcher = db.open()) {
      holder.setAutoCommit(false);
      AtomicBoolean armed = new AtomicBoolean();
      AtomicInteger released = new AtomicInteger();
      TransactionalIdempotency engine = engine(strategy, releasingAfterARollback(armed, released, () -> {
        holder.rollback(); // the lock goes once the bounded statement gave up and its transaction ended
        return null;
      }));
      assertThat(engine.attempt(request("warm-up"), ctx -> insert(ctx.connection(), "warm-up")).kind())
          .isEqualTo(AttemptResult.Kind.EXECUTED);
      try (Statement st = holder.createStatement()) {
        // Any lock that is not a duplicate's row: DDL's, or, as in the load, an extension lock.
        st.execute("LOCK TABLE idem_keys IN SHARE ROW EXCLUSIVE MODE");
      }
      armed.set(true);

      AttemptResult result = CompletableFuture
          .supplyAsync(() -> engine.attempt(request("fresh"), ctx -> insert(ctx.connection(), "fresh")))
          .get(10, TimeUnit.SECONDS);

      assertThat(result.kind()).as("%s: %s", result.kind(), result.failure().map(Throwable::getMessage).orElse(""))
          .isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(released).as("the bounded statement gave up on the lock, rolled back, and the give-up was confirmed in a new transaction")
          .hasValue(1);
      try (ResultSet rs = watcher.createStatement().executeQuery("SELECT COUNT(*) FROM notes WHERE id = 'fresh'")) {
        rs.next();
        assertThat(rs.getInt(1)).as("the effect committed once").isEqualTo(1);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void aRealDuplicateFromAnotherInstanceIsStillAnsweredInProgressQuickly(JdbcIdempotency.Strategy strategy) throws Exception {
    TransactionalIdempotency first = engine(JdbcIdempotency.Strategy.CLAIM_FIRST);
    TransactionalIdempotency other = engine(strategy); // another instance: nothing shared in memory
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    CompletableFuture<AttemptResult> slow = CompletableFuture.supplyAsync(() -> first.attempt(request("dup"), ctx -> {
      StoredResponse r = insert(ctx.connection(), "dup");
      running.countDown();
      finish.await(10, TimeUnit.SECONDS);
      return r;
    }));
    assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
    try {
      long start = System.nanoTime();
      AttemptResult duplicate = other.attempt(request("dup"), ctx -> insert(ctx.connection(), "dup-2"));
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

      assertThat(duplicate.kind()).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
      assertThat(millis).as("answered in progress without waiting for the first attempt").isLessThan(2_000);
    } finally {
      finish.countDown();
    }
    assertThat(slow.get(10, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(other.attempt(request("dup"), ctx -> insert(ctx.connection(), "dup-3")).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
  }
}
