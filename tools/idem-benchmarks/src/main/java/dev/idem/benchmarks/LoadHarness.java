package dev.idem.benchmarks;

import java.io.IOException;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The store load harness: measures Idem's stores against a naive insert, the usual hand-rolled
 * guards and Apache Camel's JDBC idempotent repository on SQLite, PostgreSQL, MariaDB and Redis,
 * runs the JMH micro-benchmarks, and writes {@code <out>/benchmarks.md} with CSV files beside it.
 *
 * <pre>
 * java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.LoadHarness [--quick|--long]
 *     [--db sqlite,postgres,mariadb,redis] [--out docs/reports]
 * </pre>
 *
 * A backend that cannot be reached is skipped with a printed note (and a line in the report).
 * Every database it creates is dropped at the end, also on Ctrl-C.
 */
public final class LoadHarness {

  private final Options o;
  private final Results results = new Results();
  private final List<AutoCloseable> open = new CopyOnWriteArrayList<>();

  private LoadHarness(Options o) {
    this.o = o;
  }

  public static void main(String[] args) {
    Options o;
    try {
      o = Options.parse(args);
    } catch (Options.UsageException e) {
      if (e.getMessage() != null) {
        System.err.println("error: " + e.getMessage());
        System.err.println(Options.usage());
        System.exit(2);
      }
      System.out.println(Options.usage());
      return;
    }
    System.exit(new LoadHarness(o).run());
  }

  private int run() {
    Instant started = Instant.now();
    long t0 = System.nanoTime();
    double loadBefore = Machine.loadAverage();
    Map<String, String> machine = Machine.describe();
    Runtime.getRuntime().addShutdownHook(new Thread(this::closeAll, "drop-benchmark-databases"));
    log("Idem load harness, mode " + o.mode.name().toLowerCase(Locale.ROOT) + ", databases " + o.databases
        + ", output " + o.out.toAbsolutePath().normalize());
    log("machine: " + machine + String.format(Locale.ROOT, ", load average %.2f", loadBefore));
    if (loadBefore > 0.5 * Runtime.getRuntime().availableProcessors()) {
      log("warning: the machine is busy (load average " + loadBefore + "); numbers will be noisy");
    }
    for (SqlBackend.Kind kind : SqlBackend.Kind.values()) {
      if (o.databases.contains(kind.id)) {
        runSql(kind);
      }
    }
    if (o.databases.contains("redis")) {
      runRedis();
    }
    if (o.jmh) {
      log("== JMH micro-benchmarks");
      try {
        results.jmh.addAll(JmhSuite.run(o));
      } catch (Exception e) {
        results.jmhNote = "JMH failed: " + LoadRunner.describe(e);
        log(results.jmhNote);
      }
    } else {
      results.jmhNote = "skipped with --no-jmh";
    }
    Duration elapsed = Duration.ofNanos(System.nanoTime() - t0);
    try {
      Path md = new Report(o, results, machine, started, elapsed, loadBefore, Machine.loadAverage()).write();
      log("wrote " + md.toAbsolutePath().normalize() + " and " + md.resolveSibling("data").toAbsolutePath().normalize()
          + "/*.csv in " + elapsed.toSeconds() + " s");
    } catch (IOException e) {
      System.err.println("error: cannot write the report: " + e.getMessage());
      return 1;
    }
    return 0;
  }

  private void runSql(SqlBackend.Kind kind) {
    SqlBackend db;
    try {
      db = SqlBackend.create(kind, o);
    } catch (SQLException | IOException | RuntimeException e) {
      String reason = kind.title + " is not reachable (" + LoadRunner.describe(e) + ")";
      log("skipped " + kind.id + ": " + reason);
      results.skipped.add(new Results.Skipped(kind.id, reason));
      return;
    }
    open.add(db);
    try {
      results.versions.put(kind.id, db.version());
      results.settings.put(kind.id, db.settings());
      log("== " + results.versions.get(kind.id) + " (" + db.where() + ")");
      List<Workload> workloads = Workloads.sql(db, o);
      for (int clients : o.clients) {
        for (Workload w : workloads) {
          measure(kind.id, w, clients);
        }
      }
      races(kind.id, workloads);
      if (o.workloads == null || o.workloads.contains("key-shape")) {
        keyShapes(db);
      }
    } catch (SQLException | RuntimeException e) {
      String reason = kind.title + " failed during the run: " + LoadRunner.describe(e);
      log(reason);
      results.skipped.add(new Results.Skipped(kind.id, reason));
    } finally {
      db.close();
      open.remove(db);
    }
  }

  private void runRedis() {
    RedisBackend redis;
    try {
      redis = RedisBackend.create(o);
    } catch (RuntimeException e) {
      String reason = "Redis is not reachable at " + o.redisUrl.replaceAll("//[^@/]*@", "//") + " (" + LoadRunner.describe(e) + ")";
      log("skipped redis: " + reason);
      results.skipped.add(new Results.Skipped("redis", reason));
      return;
    }
    open.add(redis);
    try {
      results.versions.put("redis", redis.version());
      results.settings.put("redis", redis.settings());
      log("== " + results.versions.get("redis") + " (keys " + redis.prefix + "*)");
      List<Workload> workloads = Workloads.redis(redis, o);
      for (int clients : o.clients) {
        for (Workload w : workloads) {
          measure("redis", w, clients);
        }
      }
      races("redis", workloads);
    } catch (RuntimeException e) {
      String reason = "Redis failed during the run: " + LoadRunner.describe(e);
      log(reason);
      results.skipped.add(new Results.Skipped("redis", reason));
    } finally {
      redis.close();
      open.remove(redis);
    }
  }

  private Results.Measurement measure(String database, Workload w, int clients) {
    Results.Measurement m;
    try {
      m = LoadRunner.throughput(database, w, clients, o.warmup, o.measure);
    } catch (Exception e) {
      m = new Results.Measurement(database, w.id(), clients, o.measure.toNanos() / 1e9, 0, 0, Double.NaN, Double.NaN,
          Double.NaN, Double.NaN, Double.NaN, Double.NaN, "run failed: " + LoadRunner.describe(e));
    }
    results.measurements.add(m);
    log(String.format(Locale.ROOT, "  %-8s %-18s %3d clients %10s ops/s  p50 %8s  p99 %8s  p99.9 %8s ms  errors %d%s",
        database, w.id(), clients, Report.fmtOps(m.opsPerSecond()), Report.ms(m.p50Millis()), Report.ms(m.p99Millis()),
        Report.ms(m.p999Millis()), m.errors(), m.firstError() == null ? "" : "  first: " + m.firstError()));
    return m;
  }

  private void races(String database, List<Workload> workloads) {
    if (o.workloads != null && !o.workloads.contains("race")) {
      return;
    }
    for (int clients : o.raceClients) {
      for (Workload w : workloads) {
        if (!w.raceable()) {
          continue;
        }
        Results.Race x;
        try {
          x = LoadRunner.race(database, w, clients, o.raceRounds);
        } catch (Exception e) {
          x = new Results.Race(database, w.id(), clients, o.raceRounds, 0, 0, 0, 0, 0, 0, "race failed: " + LoadRunner.describe(e));
        }
        results.races.add(x);
        log(String.format(Locale.ROOT, "  %-8s race %-18s %3d clients  %d keys  %d effects  %d duplicates  %d missing  %d errors%s",
            database, w.id(), clients, x.rounds(), x.effects(), x.duplicates(), x.missing(), x.errors(),
            x.firstError() == null ? "" : "  first: " + x.firstError()));
      }
    }
  }

  private void keyShapes(SqlBackend db) throws SQLException {
    for (Keys.Shape shape : Keys.Shape.values()) {
      Workload.KeySupply supply = shape == Keys.Shape.UUID_V7 ? Workload.KeySupply.NEW_V7 : Workload.KeySupply.NEW_V4;
      IdemCreate w = new IdemCreate(db, "idem-create-" + shape.label(), "bench_shape_" + shape.label(),
          supply, o.shapePreload);
      long t = System.nanoTime();
      w.setUp(); // creates the table and loads the records once
      double loadSeconds = (System.nanoTime() - t) / 1e9;
      log(String.format(Locale.ROOT, "  %-8s loaded %,d %s records in %.1f s", db.kind.id, o.shapePreload, shape.label(), loadSeconds));
      try {
        for (int clients : o.shapeClients) {
          Results.Measurement m;
          try {
            m = LoadRunner.throughput(db.kind.id, w, clients, o.warmup, o.measure);
          } catch (Exception e) {
            m = new Results.Measurement(db.kind.id, w.id(), clients, o.measure.toNanos() / 1e9, 0, 0, Double.NaN,
                Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, "run failed: " + LoadRunner.describe(e));
          }
          long bytes = w.tableBytes();
          results.shapes.add(new Results.Shape(db.kind.id, shape.label(), o.shapePreload, loadSeconds, bytes, m));
          log(String.format(Locale.ROOT, "  %-8s %-18s %3d clients %10s ops/s  p50 %8s  p99 %8s  p99.9 %8s ms  errors %d%s",
              db.kind.id, w.id(), clients, Report.fmtOps(m.opsPerSecond()), Report.ms(m.p50Millis()), Report.ms(m.p99Millis()),
              Report.ms(m.p999Millis()), m.errors(), m.firstError() == null ? "" : "  first: " + m.firstError()));
        }
      } finally {
        w.drop();
      }
    }
  }

  private void closeAll() {
    for (AutoCloseable c : open) {
      try {
        c.close();
      } catch (Exception e) {
        System.err.println("warning: cleanup failed: " + e.getMessage());
      }
    }
  }

  private static void log(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
