package dev.idem.jdbc;

import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A load harness, not a test of the suite: 16 threads create with fresh keys through {@link
 * TransactionalIdempotency} in {@code KEY_LAST} order with the Spring starter's claim bound (10 ms),
 * and every answer that is not {@code EXECUTED} is counted by kind and by the SQLState and message
 * of its failure. On PostgreSQL a second connection samples the lock waits ({@code pg_locks} rows
 * not granted) meanwhile. Runs only when asked:
 *
 * <pre>
 * ./mvnw -B -q -o -pl idem-jdbc test -Dtest=BoundedClaimCreatesLoad -Djacoco.skip=true \
 *     -Didem.load.creates=50000 -Didem.load.db=postgresql -Didem.load.seconds=180
 * </pre>
 */
class BoundedClaimCreatesLoad {

  @Test
  void createsWithFreshKeys() throws Exception {
    int creates = Integer.getInteger("idem.load.creates", 0);
    Assumptions.assumeTrue(creates > 0, "a load run, only with -Didem.load.creates=N");
    int threads = Integer.getInteger("idem.load.threads", 16);
    long seconds = Long.getLong("idem.load.seconds", 180);
    TestDb.Kind kind = TestDb.Kind.valueOf(System.getProperty("idem.load.db", "postgresql").toUpperCase());
    TestDb db = TestDb.create(kind);
    try {
      run(db, creates, threads, seconds);
    } finally {
      db.drop();
    }
  }

  private static void run(TestDb db, int creates, int threads, long seconds) throws Exception {
    try (Connection c = db.open(); Statement st = c.createStatement()) {
      st.execute(db.kind == TestDb.Kind.POSTGRESQL
          ? "CREATE TABLE notes (id VARCHAR(64) PRIMARY KEY, body TEXT NOT NULL, created_at BIGINT NOT NULL)"
          : "CREATE TABLE notes (id VARCHAR(64) PRIMARY KEY, body TEXT NOT NULL, created_at BIGINT NOT NULL) ENGINE=InnoDB");
    }
    Pool pool = new Pool(db, threads + 2);
    JdbcIdempotency keys = JdbcIdempotency.builder().claimLockWait(Duration.ofMillis(10))
        .strategy(JdbcIdempotency.Strategy.valueOf(System.getProperty("idem.load.strategy", "KEY_LAST"))).build();
    try (Connection c = db.open()) {
      keys.createSchema(c); // as the starter does at start-up, before the first request
    }
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(keys, pool, IdemListener.NONE);
    Map<String, AtomicInteger> answers = new ConcurrentHashMap<>();
    Map<String, AtomicInteger> waits = new ConcurrentHashMap<>();
    AtomicInteger next = new AtomicInteger();
    LongAdder done = new LongAdder();
    AtomicBoolean stop = new AtomicBoolean();
    long deadline = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
    String body = "x".repeat(200);
    CountDownLatch finished = new CountDownLatch(threads);
    for (int t = 0; t < threads; t++) {
      Thread worker = new Thread(() -> {
        try {
          while (next.getAndIncrement() < creates && System.nanoTime() < deadline) {
            String key = UUID.randomUUID().toString();
            IdempotentRequest request = IdempotentRequest.ofJson("anonymous", "POST /notes", key,
                ("{\"body\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8));
            AttemptResult result;
            try {
              result = engine.attempt(request, ctx -> {
                try (PreparedStatement ps = ctx.connection().prepareStatement(
                    "INSERT INTO notes (id, body, created_at) VALUES (?, ?, ?)")) {
                  ps.setString(1, key);
                  ps.setString(2, body);
                  ps.setLong(3, System.currentTimeMillis());
                  ps.executeUpdate();
                }
                return StoredResponse.of(201, "{\"id\":\"" + key + "\"}");
              });
            } catch (RuntimeException e) {
              answers.computeIfAbsent("THROWN " + describe(e), k -> new AtomicInteger()).incrementAndGet();
              continue;
            }
            if (result.kind() != AttemptResult.Kind.EXECUTED) {
              String what = result.kind() + " " + result.failure().map(BoundedClaimCreatesLoad::describe).orElse("");
              answers.computeIfAbsent(what, k -> new AtomicInteger()).incrementAndGet();
            }
            done.increment();
          }
        } finally {
          finished.countDown();
        }
      });
      worker.start();
    }
    Thread sampler = null;
    if (db.kind == TestDb.Kind.POSTGRESQL) {
      sampler = new Thread(() -> {
        try (Connection c = db.open(); PreparedStatement ps = c.prepareStatement(
            "SELECT w.locktype, w.mode, COALESCE(w.relation::regclass::text, ''), COALESCE(h.mode, ''),"
                + " COALESCE(a.backend_type, ''), COALESCE(left(a.query, 40), '')"
                + " FROM pg_locks w LEFT JOIN pg_locks h ON h.granted AND h.locktype = w.locktype"
                + " AND h.database IS NOT DISTINCT FROM w.database AND h.relation IS NOT DISTINCT FROM w.relation"
                + " AND h.page IS NOT DISTINCT FROM w.page AND h.tuple IS NOT DISTINCT FROM w.tuple"
                + " AND h.transactionid IS NOT DISTINCT FROM w.transactionid AND h.pid <> w.pid"
                + " LEFT JOIN pg_stat_activity a ON a.pid = h.pid WHERE NOT w.granted")) {
          while (!stop.get()) {
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                String w = rs.getString(1) + " " + rs.getString(2) + " on " + rs.getString(3) + " held " + rs.getString(4)
                    + " by " + rs.getString(5) + " [" + rs.getString(6) + "]";
                waits.computeIfAbsent(w, k -> new AtomicInteger()).incrementAndGet();
              }
            }
            Thread.sleep(5);
          }
        } catch (Exception e) {
          waits.computeIfAbsent("sampler failed: " + e, k -> new AtomicInteger()).incrementAndGet();
        }
      });
      sampler.setDaemon(true);
      sampler.start();
    }
    long start = System.nanoTime();
    finished.await();
    stop.set(true);
    if (sampler != null) {
      sampler.join(2000);
    }
    long millis = (System.nanoTime() - start) / 1_000_000;
    pool.close();
    PrintWriter out = new PrintWriter(System.out, true);
    out.printf("%s: %d creates by %d threads in %d ms (%.0f/s)%n", db.kind, done.sum(), threads, millis, done.sum() * 1000.0 / millis);
    out.println("answers other than EXECUTED: " + (answers.isEmpty() ? "none" : ""));
    new TreeMap<>(answers).forEach((k, v) -> out.println("  " + v + " x " + k));
    if (!waits.isEmpty()) {
      out.println("lock waits sampled (not granted), by lock and holder:");
      new TreeMap<>(waits).forEach((k, v) -> out.println("  " + v + " x " + k));
    }
  }

  private static String describe(Throwable e) {
    StringBuilder s = new StringBuilder(e.getClass().getSimpleName());
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof SQLException sql) {
        s.append(" [SQLState ").append(sql.getSQLState()).append(" code ").append(sql.getErrorCode()).append("] ")
            .append(String.valueOf(sql.getMessage()).replaceAll("\\s+", " "));
        return s.toString();
      }
    }
    return s.append(": ").append(e.getMessage()).toString();
  }

  /** A fixed pool of connections whose close() gives the connection back. */
  private static final class Pool implements DataSource, AutoCloseable {
    private final BlockingQueue<Connection> idle;
    private final java.util.List<Connection> all = new java.util.ArrayList<>();

    Pool(TestDb db, int size) throws SQLException {
      idle = new ArrayBlockingQueue<>(size);
      for (int i = 0; i < size; i++) {
        Connection c = db.open();
        all.add(c);
        idle.add(c);
      }
    }

    @Override
    public Connection getConnection() throws SQLException {
      Connection real;
      try {
        real = idle.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SQLException("interrupted");
      }
      AtomicBoolean closed = new AtomicBoolean();
      return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> {
            if (method.getName().equals("close")) {
              if (closed.compareAndSet(false, true)) {
                if (!real.getAutoCommit()) {
                  real.rollback();
                  real.setAutoCommit(true);
                }
                idle.add(real);
              }
              return null;
            }
            if (method.getName().equals("isClosed")) {
              return closed.get();
            }
            try {
              return method.invoke(real, args);
            } catch (java.lang.reflect.InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }

    @Override
    public void close() throws SQLException {
      for (Connection c : all) {
        c.close();
      }
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
