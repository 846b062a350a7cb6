package dev.idem.benchmarks.steps;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.steps.JdbcStepOperations;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What a multi-step operation costs, one client, against the single-step transactional create:
 *
 * <ul>
 *   <li>{@code singleStep}: {@link JdbcIdempotency#execute} of one INSERT (claim, effect, stored
 *       response in one transaction);
 *   <li>{@code threeSteps}: {@link JdbcStepOperations#execute} of three local steps of one INSERT
 *       each, start to end (a lease claim, the input's row, three step transactions, the completion);
 *   <li>{@code resumeLastStep}: the same operation resumed after its second step (the first run
 *       stopped there, in the invocation's set-up, not timed): a takeover, the read of the recorded
 *       steps, the third step, the completion.
 * </ul>
 *
 * Run: {@code java -jar tools/idem-benchmarks/target/benchmarks.jar StepsBenchmark} (add {@code -p
 * db=sqlite} or {@code -p db=postgres}; PostgreSQL at {@code IDEM_BENCH_POSTGRES_URL}, default
 * {@code jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres}).
 */
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class StepsBenchmark {

  @Param({"sqlite", "postgres"})
  public String db;

  private Path dir;
  private DataSource dataSource;
  private String suffix;
  private JdbcIdempotency single;
  private JdbcStepOperations steps;
  private @Nullable IdempotentRequest pending;

  /** Stops a run after its second step, as a crash would. */
  private static final class Stop extends RuntimeException {
    Stop() {
      super("stopped after step two", null, false, false);
    }
  }

  private volatile boolean stopAfterTwo;

  private final StepOperation threeInserts = (s, input) -> {
    s.local("one", c -> insert(c, "one"));
    s.local("two", c -> insert(c, "two"));
    if (stopAfterTwo) {
      throw new Stop();
    }
    s.local("three", c -> insert(c, "three"));
    return StoredResponse.of(201, "{\"done\":true}");
  };

  private String insert(Connection c, String step) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO bench_rows_" + suffix + " (step) VALUES (?)")) {
      ps.setString(1, step);
      ps.executeUpdate();
    }
    return step;
  }

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    String url;
    if (db.equals("sqlite")) {
      dir = Files.createTempDirectory("idem-steps-bench");
      url = "jdbc:sqlite:" + dir.resolve("bench.db") + "?journal_mode=WAL&synchronous=NORMAL&busy_timeout=10000";
    } else {
      url = System.getenv().getOrDefault("IDEM_BENCH_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres");
    }
    dataSource = new PooledOne(url);
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE bench_rows_" + suffix + " (step VARCHAR(16) NOT NULL)");
    }
    single = JdbcIdempotency.builder().table("bench_keys1_" + suffix).build();
    // A lease of 1 ms: the resumed run takes the stopped one over at once (a run whose lease ran
    // out still records its own steps until another takes it over).
    steps = JdbcStepOperations.builder(dataSource).keyTable("bench_keys3_" + suffix).stepTable("bench_steps_" + suffix)
        .lease(Duration.ofMillis(1)).retention(Duration.ofHours(1)).build();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      for (String t : new String[] {"bench_rows_", "bench_keys1_", "bench_keys3_", "bench_steps_"}) {
        st.execute("DROP TABLE IF EXISTS " + t + suffix);
      }
    }
    ((PooledOne) dataSource).close();
  }

  private static IdempotentRequest request() {
    return new IdempotentRequest(Scope.of("bench", "POST /rides"), IdempotencyKey.of(UUID.randomUUID().toString()),
        Fingerprint.ofJson("{\"rider\":\"bench\"}".getBytes(StandardCharsets.UTF_8)));
  }

  @Benchmark
  public Outcome singleStep() throws Exception {
    try (Connection c = dataSource.getConnection()) {
      return single.execute(c, request(), ctx -> StoredResponse.of(201, insert(ctx.connection(), "single")));
    }
  }

  @Benchmark
  public Outcome threeSteps() throws Exception {
    stopAfterTwo = false;
    return steps.execute(request(), new byte[0], threeInserts);
  }

  @Setup(Level.Invocation)
  public void stopAfterStepTwo() throws Exception {
    IdempotentRequest r = request();
    stopAfterTwo = true;
    try {
      steps.execute(r, new byte[0], threeInserts);
      throw new IllegalStateException("the first run did not stop");
    } catch (Stop expected) {
      pending = r;
    }
    stopAfterTwo = false;
    Thread.sleep(2); // past the 1 ms lease
  }

  @Benchmark
  public Outcome resumeLastStep() throws Exception {
    Outcome resumed = steps.execute(pending, new byte[0], threeInserts);
    if (!resumed.recovery()) {
      throw new IllegalStateException("not a resume");
    }
    return resumed;
  }

  /** One physical connection, reused (a pool of one, as a single client has): the connection cost stays out of every figure. */
  static final class PooledOne implements DataSource {
    private final Connection connection;

    PooledOne(String url) throws SQLException {
      this.connection = DriverManager.getConnection(url);
    }

    @Override
    public Connection getConnection() {
      return (Connection) java.lang.reflect.Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> {
            if (method.getName().equals("close")) {
              if (!connection.getAutoCommit()) {
                connection.rollback();
                connection.setAutoCommit(true);
              }
              return null;
            }
            try {
              return method.invoke(connection, args);
            } catch (java.lang.reflect.InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }

    void close() throws SQLException {
      connection.close();
    }

    @Override
    public Connection getConnection(String user, String password) {
      return getConnection();
    }

    @Override
    public java.io.PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(java.io.PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public java.util.logging.Logger getParentLogger() {
      return java.util.logging.Logger.getGlobal();
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
