package dev.idem.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.DataSourceTransactionRunner;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.jdbc.EffectTable;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * Waiting duplicates beside unrelated creates, on PostgreSQL with a HikariCP pool: the question of
 * issue 22, item 4. A closed loop of clients makes unrelated creates (one row and its key, each with
 * a fresh idempotency key) while {@code --duplicates} threads keep sending one slow request (its
 * effect holds its transaction for {@code --slow}) with the same key, retrying 100 ms after each
 * 409, as impatient clients do. The four phases run one after another on one pool and database, in
 * one run, and the whole run twice: with the server's defaults and with {@code synchronous_commit =
 * off} on the benchmark's database (where the commit's disk flush no longer hides CPU):
 *
 * <ol>
 *   <li>{@code baseline}: the creates alone;
 *   <li>{@code fail-fast}: with the duplicates in the same instance (one engine), answered in
 *       progress at once;
 *   <li>{@code wait}: the same, duplicates waiting in memory for the first attempt, up to 5 s;
 *   <li>{@code fail-fast, other instances} and {@code wait, other instances}: each duplicate on an
 *       engine of its own, as if on another instance of the service, so that it meets the first
 *       attempt in the database only: the claim bounded at 10 ms (the starter's), then 409 at once,
 *       or attempts again without a connection between them, up to 5 s;
 *   <li>{@code unbounded}: the claim without a bound, as before the fix: each duplicate waits on the
 *       first attempt's row holding a pooled connection.
 * </ol>
 *
 * It prints a Markdown table (and writes {@code docs/reports/benchmarks-duplicates.md} with {@code --out
 * docs/reports}): the unrelated creates' count, rate, p50 and p99 and their ratios to the baseline, and CPU
 * per unrelated create of this JVM and of every PostgreSQL server process (read from
 * {@code /proc}; the duplicates' own work is in it). Run with:
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package
 * java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.DuplicateWaitLoad --out docs/reports
 * }</pre>
 *
 * Options: {@code --admin-url} (default {@code jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres};
 * a database {@code idem_dupbench_<random>} is made there and dropped), {@code --pool 10},
 * {@code --clients 4}, {@code --duplicates 30}, {@code --slow 4s}, {@code --seconds 15} per phase
 * (after 3 s of warm-up), {@code --out DIR}.
 */
public final class DuplicateWaitLoad {

  private static final Scope SCOPE = Scope.of("bench", "POST /orders");
  private static final Fingerprint PAYLOAD = Fingerprint.ofJson("{\"item\":1}".getBytes(StandardCharsets.UTF_8));

  private DuplicateWaitLoad() {}

  /** One phase's figures. */
  record Phase(String name, String what, long creates, double seconds, LatencyStats latency, long appCpuNanos, long dbCpuNanos,
      long duplicateAttempts, long slowRuns) {}

  public static void main(String[] args) throws Exception {
    String adminUrl = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";
    int pool = 10;
    int clients = 4;
    int duplicates = 30;
    Duration slow = Duration.ofSeconds(4);
    int seconds = 15;
    Path out = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--admin-url" -> adminUrl = args[++i];
        case "--pool" -> pool = Integer.parseInt(args[++i]);
        case "--clients" -> clients = Integer.parseInt(args[++i]);
        case "--duplicates" -> duplicates = Integer.parseInt(args[++i]);
        case "--slow" -> slow = Duration.parse("PT" + args[++i].toUpperCase(Locale.ROOT));
        case "--seconds" -> seconds = Integer.parseInt(args[++i]);
        case "--out" -> out = Path.of(args[++i]);
        case "--help" -> {
          System.out.println("DuplicateWaitLoad [--admin-url URL] [--pool 10] [--clients 4] [--duplicates 30] [--slow 4s]"
              + " [--seconds 15] [--out DIR]");
          return;
        }
        default -> throw new IllegalArgumentException("unknown option " + args[i] + " (see --help)");
      }
    }
    StringBuilder report = new StringBuilder(header(pool, clients, duplicates, slow, seconds));
    for (boolean synchronousCommit : new boolean[] {true, false}) {
      String database = "idem_dupbench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
      try (Connection admin = DriverManager.getConnection(adminUrl); Statement st = admin.createStatement()) {
        st.execute("CREATE DATABASE " + database);
        if (!synchronousCommit) {
          st.execute("ALTER DATABASE " + database + " SET synchronous_commit = off");
        }
      }
      List<Phase> phases = new ArrayList<>();
      String server;
      try {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(adminUrl.replace("/postgres?", "/" + database + "?"));
        config.setMaximumPoolSize(pool);
        config.setMinimumIdle(pool);
        config.setConnectionTimeout(60_000);
        try (HikariDataSource ds = new HikariDataSource(config)) {
          EffectTable effects = new EffectTable("bench_effects");
          JdbcIdempotency bounded = JdbcIdempotency.builder().claimLockWait(Duration.ofMillis(10)).build();
          JdbcIdempotency unbounded = JdbcIdempotency.builder().build();
          try (Connection c = ds.getConnection()) {
            effects.recreate(c);
            bounded.createSchema(c);
            server = c.getMetaData().getDatabaseProductName() + " " + c.getMetaData().getDatabaseProductVersion();
          }
          DataSourceTransactionRunner runner = new DataSourceTransactionRunner(ds);
          TransactionalIdempotency failFast = new TransactionalIdempotency(bounded, runner, IdemListener.NONE, InProgressPolicy.failFast());
          TransactionalIdempotency waiting =
              new TransactionalIdempotency(bounded, runner, IdemListener.NONE, InProgressPolicy.waitUpTo(Duration.ofSeconds(5)));
          TransactionalIdempotency before = new TransactionalIdempotency(unbounded, runner, IdemListener.NONE);
          // "other instances": each duplicate thread has an engine of its own, as if it reached
          // another instance of the service: it meets the first attempt only in the database
          java.util.function.Supplier<TransactionalIdempotency> otherFailFast = () -> new TransactionalIdempotency(
              JdbcIdempotency.builder().claimLockWait(Duration.ofMillis(10)).build(), runner, IdemListener.NONE, InProgressPolicy.failFast());
          java.util.function.Supplier<TransactionalIdempotency> otherWaiting = () -> new TransactionalIdempotency(
              JdbcIdempotency.builder().claimLockWait(Duration.ofMillis(10)).build(), runner, IdemListener.NONE,
              InProgressPolicy.waitUpTo(Duration.ofSeconds(5)));
          phases.add(run("baseline", "unrelated creates alone", failFast, null, effects, clients, 0, slow, seconds));
          phases.add(run("fail-fast", duplicates + " duplicates in the same instance, 409 at once", failFast, () -> failFast, effects,
              clients, duplicates, slow, seconds));
          phases.add(run("wait", duplicates + " duplicates in the same instance, waiting up to 5 s", failFast, () -> waiting, effects,
              clients, duplicates, slow, seconds));
          phases.add(run("fail-fast, other instances", duplicates + " duplicates each on an instance of its own, claim bounded at"
              + " 10 ms, 409 at once", failFast, otherFailFast, effects, clients, duplicates, slow, seconds));
          phases.add(run("wait, other instances", duplicates + " duplicates each on an instance of its own, claim bounded at 10 ms,"
              + " attempts again without a connection up to 5 s", failFast, otherWaiting, effects, clients, duplicates, slow, seconds));
          phases.add(run("unbounded", duplicates + " duplicates, claim waiting on the row (before the fix)", failFast, () -> before,
              effects, clients, duplicates, slow, seconds));
        }
      } finally {
        try (Connection admin = DriverManager.getConnection(adminUrl); Statement st = admin.createStatement()) {
          st.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
        }
      }
      report.append(table(phases, server + (synchronousCommit ? ", the server's defaults" : ", synchronous_commit = off")));
    }
    report.append("\nTarget (issue 22, item 4): the unrelated creates' p50 and p99 with duplicates at most 1.2× the baseline's.\n");
    System.out.println(report);
    if (out != null) {
      Files.createDirectories(out);
      Files.writeString(out.resolve("benchmarks-duplicates.md"), report);
    }
  }

  private static Phase run(String name, String what, TransactionalIdempotency creates,
      java.util.function.Supplier<TransactionalIdempotency> duplicatesEngine,
      EffectTable effects, int clients, int duplicates, Duration slow, int seconds) throws Exception {
    AtomicBoolean measuring = new AtomicBoolean();
    AtomicBoolean stop = new AtomicBoolean();
    LatencyStats[] perClient = new LatencyStats[clients];
    AtomicLong created = new AtomicLong();
    AtomicLong duplicateAttempts = new AtomicLong();
    AtomicLong slowRuns = new AtomicLong();
    AtomicInteger round = new AtomicInteger();
    String prefix = name + "-" + UUID.randomUUID().toString().substring(0, 6);
    ExecutorService threads = Executors.newFixedThreadPool(clients + duplicates);
    Effect create = ctx -> {
      long id = effects.insert(ctx.connection(), "create", "{}");
      return StoredResponse.builder(201).body("{\"id\":" + id + "}").build();
    };
    Effect slowEffect = ctx -> {
      long id = effects.insert(ctx.connection(), "slow", "{}");
      slowRuns.incrementAndGet();
      Thread.sleep(slow.toMillis());
      return StoredResponse.builder(201).body("{\"id\":" + id + "}").build();
    };
    for (int i = 0; i < clients; i++) {
      LatencyStats stats = new LatencyStats();
      perClient[i] = stats;
      int client = i;
      threads.submit(() -> {
        long n = 0;
        while (!stop.get()) {
          IdempotentRequest request = new IdempotentRequest(SCOPE, IdempotencyKey.of(prefix + "-c" + client + "-" + n++), PAYLOAD);
          long start = System.nanoTime();
          AttemptResult result = creates.attempt(request, create);
          long took = System.nanoTime() - start;
          if (result.kind() != AttemptResult.Kind.EXECUTED) {
            throw new IllegalStateException("an unrelated create was answered " + result.kind());
          }
          if (measuring.get()) {
            stats.recordNanos(took);
            created.incrementAndGet();
          }
        }
        return null;
      });
    }
    for (int i = 0; i < duplicates; i++) {
      TransactionalIdempotency engine = duplicates == 0 ? null : duplicatesEngine.get();
      threads.submit(() -> {
        while (!stop.get()) {
          int r = round.get();
          IdempotentRequest request = new IdempotentRequest(SCOPE, IdempotencyKey.of(prefix + "-slow-" + r), PAYLOAD);
          AttemptResult result = engine.attempt(request, slowEffect);
          if (measuring.get()) {
            duplicateAttempts.incrementAndGet();
          }
          switch (result.kind()) {
            case EXECUTED, REPLAYED -> round.compareAndSet(r, r + 1);
            default -> Thread.sleep(100); // 409, or a store failure: an impatient client retries soon
          }
        }
        return null;
      });
    }
    Thread.sleep(3_000);
    long appBefore = appCpuNanos();
    long dbBefore = postgresCpuNanos();
    long start = System.nanoTime();
    measuring.set(true);
    Thread.sleep(seconds * 1_000L);
    measuring.set(false);
    double elapsed = (System.nanoTime() - start) / 1e9;
    long app = appCpuNanos() - appBefore;
    long db = postgresCpuNanos() - dbBefore;
    stop.set(true);
    threads.shutdown();
    if (!threads.awaitTermination(slow.toSeconds() + 30, TimeUnit.SECONDS)) {
      threads.shutdownNow();
    }
    LatencyStats all = new LatencyStats();
    for (LatencyStats s : perClient) {
      all.add(s);
    }
    return new Phase(name, what, created.get(), elapsed, all, app, db, duplicateAttempts.get(), slowRuns.get());
  }

  private static long appCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  /** utime + stime of every process named postgres, in nanoseconds (Linux /proc; clock ticks of 100 Hz). */
  private static long postgresCpuNanos() {
    long ticks = 0;
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : (Iterable<Path>) procs::iterator) {
        String pid = p.getFileName().toString();
        if (!pid.chars().allMatch(Character::isDigit)) {
          continue;
        }
        try {
          String stat = Files.readString(p.resolve("stat"));
          int close = stat.lastIndexOf(')');
          String comm = stat.substring(stat.indexOf('(') + 1, close);
          if (!comm.startsWith("postgres")) {
            continue;
          }
          String[] f = stat.substring(close + 2).split(" ");
          ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]);
        } catch (IOException | RuntimeException gone) {
          // the process ended meanwhile
        }
      }
    } catch (IOException e) {
      return 0;
    }
    return ticks * 10_000_000L;
  }

  private static String header(int pool, int clients, int duplicates, Duration slow, int seconds) {
    return "# Waiting duplicates beside unrelated creates\n\n"
        + "Generated by `java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.DuplicateWaitLoad --out docs/reports`"
        + " (source: `tools/idem-benchmarks/src/main/java/dev/idem/benchmarks/DuplicateWaitLoad.java`). Do not edit by hand.\n\n"
        + "One run, one JVM, PostgreSQL on loopback (a database of its own per regime), a HikariCP pool of " + pool
        + " connections, Idem's transactional engine on plain JDBC. " + clients
        + " closed-loop clients make unrelated creates (a row and its key, a fresh key each); in the phases with duplicates, "
        + duplicates + " threads keep sending one slow request (its effect holds its transaction " + slow.toMillis()
        + " ms) with the same key, retrying 100 ms after each 409. Each phase: 3 s of warm-up, then " + seconds
        + " s measured; the phases run one after another in the same run. Machine: " + Runtime.getRuntime().availableProcessors()
        + " cores.\n\n"
        + "CPU per create is this JVM's and every PostgreSQL server process's CPU time in the measured window, divided by the"
        + " unrelated creates: the duplicates' own attempts are in it.\n";
  }

  private static String table(List<Phase> phases, String regime) {
    Phase base = phases.get(0);
    StringBuilder b = new StringBuilder();
    b.append("\n## ").append(regime).append("\n\n")
        .append(String.format(Locale.ROOT, "Load average at the end: %.1f.%n%n", Machine.loadAverage()))
        .append("| phase | what | creates | creates/s | p50 ms | p99 ms | p50 / baseline | p99 / baseline | app CPU µs/create | PostgreSQL CPU µs/create | duplicate attempts | slow runs |\n")
        .append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Phase p : phases) {
      double p50 = p.latency().percentileMillis(50);
      double p99 = p.latency().percentileMillis(99);
      b.append(String.format(Locale.ROOT, "| %s | %s | %d | %.0f | %.2f | %.2f | %.2f× | %.2f× | %.0f | %.0f | %d | %d |%n", p.name(), p.what(),
          p.creates(), p.creates() / p.seconds(), p50, p99, p50 / base.latency().percentileMillis(50),
          p99 / base.latency().percentileMillis(99), p.creates() == 0 ? 0.0 : p.appCpuNanos() / 1e3 / p.creates(),
          p.creates() == 0 ? 0.0 : p.dbCpuNanos() / 1e3 / p.creates(), p.duplicateAttempts(), p.slowRuns()));
    }
    return b.toString();
  }
}
