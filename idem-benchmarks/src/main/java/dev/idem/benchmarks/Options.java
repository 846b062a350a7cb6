package dev.idem.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The harness's command line. Modes set every size at once; the other options override single
 * sizes (for trying things out: a report made with overrides says so).
 */
final class Options {

  /** How long and how large a run is. */
  enum Mode {
    QUICK, DEFAULT, LONG
  }

  static final List<String> ALL_DATABASES = List.of("sqlite", "postgres", "mariadb", "redis");

  Mode mode = Mode.DEFAULT;
  Set<String> databases = new LinkedHashSet<>(ALL_DATABASES);
  Path out = Path.of("docs");
  boolean jmh = true;
  Set<String> workloads; // null: all
  String postgresUrl = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";
  String mariadbUrl = "jdbc:mariadb://127.0.0.1:3306/?user=root";
  String redisUrl = "redis://127.0.0.1:6379";
  Path sqliteDir; // null: the system temporary folder

  Duration warmup;
  Duration measure;
  List<Integer> clients;
  List<Integer> raceClients;
  int raceRounds;
  int replayKeys;
  int shapePreload;
  List<Integer> shapeClients;
  int jmhForks;
  int jmhWarmupIterations;
  Duration jmhWarmupTime;
  int jmhIterations;
  Duration jmhIterationTime;
  final List<String> overrides = new ArrayList<>();
  final List<String> argv = new ArrayList<>();

  static final String USAGE = String.join("\n",
      "usage: java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.LoadHarness [options]",
      "",
      "  --quick               ~1-minute smoke run (small sizes; its numbers are not a result)",
      "  --long                longer runs and more samples than the default (~1 hour)",
      "  --db LIST             backends, comma-separated: sqlite,postgres,mariadb,redis (default all; none: JMH only)",
      "  --out DIR             writes DIR/benchmarks.md and DIR/benchmarks/*.csv (default docs)",
      "  --no-jmh              skip the JMH micro-benchmarks",
      "  --workloads LIST      only these workload ids (see the report), comma-separated; add race and key-shape",
      "                        to keep those phases",
      "  --postgres-url URL    admin URL (default jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres)",
      "  --mariadb-url URL     admin URL (default jdbc:mariadb://127.0.0.1:3306/?user=root)",
      "  --redis-url URL       (default redis://127.0.0.1:6379)",
      "  --sqlite-dir DIR      where the SQLite file is made (default the system temporary folder)",
      "  --clients LIST        client counts of the throughput runs (default 1,4,16,64)",
      "  --warmup SECONDS      warm-up per run;  --duration SECONDS  measurement per run",
      "  --race-clients LIST   client counts of the races (default 4,16,64);  --race-rounds N  keys per race",
      "  --shape-preload N     records stored before the key-shape runs (default 1000000)",
      "  --help");

  static Options parse(String... args) {
    Options o = new Options();
    o.argv.addAll(Arrays.asList(args));
    for (String a : args) {
      if (a.equals("--quick")) {
        o.mode = Mode.QUICK;
      } else if (a.equals("--long")) {
        o.mode = Mode.LONG;
      }
    }
    o.applyMode();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--quick":
        case "--long":
          break;
        case "--help":
        case "-h":
          throw new UsageException(null);
        case "--no-jmh":
          o.jmh = false;
          break;
        case "--db":
          o.databases = new LinkedHashSet<>();
          List<String> dbs = list(args, ++i, a);
          if (dbs.equals(List.of("none"))) {
            break; // JMH only
          }
          for (String d : dbs) {
            String db = d.toLowerCase(Locale.ROOT);
            if (db.equals("postgresql")) {
              db = "postgres";
            } else if (db.equals("mysql")) {
              db = "mariadb";
            }
            if (!ALL_DATABASES.contains(db)) {
              throw new UsageException("unknown database '" + d + "' in --db; known: " + ALL_DATABASES);
            }
            o.databases.add(db);
          }
          break;
        case "--out":
          o.out = Path.of(value(args, ++i, a));
          break;
        case "--workloads":
          o.workloads = new LinkedHashSet<>(list(args, ++i, a));
          o.overrides.add("--workloads " + args[i]);
          break;
        case "--postgres-url":
          o.postgresUrl = value(args, ++i, a);
          break;
        case "--mariadb-url":
          o.mariadbUrl = value(args, ++i, a);
          break;
        case "--redis-url":
          o.redisUrl = value(args, ++i, a);
          break;
        case "--sqlite-dir":
          o.sqliteDir = Path.of(value(args, ++i, a));
          break;
        case "--clients":
          o.clients = ints(args, ++i, a);
          o.overrides.add("--clients " + args[i]);
          break;
        case "--warmup":
          o.warmup = seconds(args, ++i, a);
          o.overrides.add("--warmup " + args[i]);
          break;
        case "--duration":
          o.measure = seconds(args, ++i, a);
          o.overrides.add("--duration " + args[i]);
          break;
        case "--race-clients":
          o.raceClients = ints(args, ++i, a);
          o.overrides.add("--race-clients " + args[i]);
          break;
        case "--race-rounds":
          o.raceRounds = ints(args, ++i, a).get(0);
          o.overrides.add("--race-rounds " + args[i]);
          break;
        case "--shape-preload":
          o.shapePreload = ints(args, ++i, a).get(0);
          o.overrides.add("--shape-preload " + args[i]);
          break;
        default:
          throw new UsageException("unknown option '" + a + "'");
      }
    }
    return o;
  }

  private void applyMode() {
    switch (mode) {
      case QUICK:
        warmup = Duration.ofMillis(200);
        measure = Duration.ofMillis(500);
        clients = List.of(1, 16);
        raceClients = List.of(16);
        raceRounds = 5;
        replayKeys = 1_000;
        shapePreload = 10_000;
        shapeClients = List.of(4);
        jmhForks = 1;
        jmhWarmupIterations = 1;
        jmhWarmupTime = Duration.ofMillis(300);
        jmhIterations = 1;
        jmhIterationTime = Duration.ofMillis(500);
        break;
      case LONG:
        warmup = Duration.ofSeconds(5);
        measure = Duration.ofSeconds(20);
        clients = List.of(1, 4, 16, 64);
        raceClients = List.of(4, 16, 64);
        raceRounds = 200;
        replayKeys = 100_000;
        shapePreload = 1_000_000;
        shapeClients = List.of(1, 4, 16, 64);
        jmhForks = 3;
        jmhWarmupIterations = 5;
        jmhWarmupTime = Duration.ofSeconds(2);
        jmhIterations = 10;
        jmhIterationTime = Duration.ofSeconds(2);
        break;
      default:
        warmup = Duration.ofSeconds(1);
        measure = Duration.ofSeconds(3);
        clients = List.of(1, 4, 16, 64);
        raceClients = List.of(4, 16, 64);
        raceRounds = 25;
        replayKeys = 10_000;
        shapePreload = 1_000_000;
        shapeClients = List.of(1, 16);
        jmhForks = 1;
        jmhWarmupIterations = 2;
        jmhWarmupTime = Duration.ofSeconds(1);
        jmhIterations = 3;
        jmhIterationTime = Duration.ofSeconds(1);
        break;
    }
  }

  boolean runs(String workload) {
    return workloads == null || workloads.contains(workload);
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length || args[i].startsWith("--")) {
      throw new UsageException(option + " needs a value");
    }
    return args[i];
  }

  private static List<String> list(String[] args, int i, String option) {
    List<String> items = new ArrayList<>();
    for (String s : value(args, i, option).split(",")) {
      if (!s.isBlank()) {
        items.add(s.strip());
      }
    }
    if (items.isEmpty()) {
      throw new UsageException(option + " needs at least one item");
    }
    return items;
  }

  private static List<Integer> ints(String[] args, int i, String option) {
    List<Integer> values = new ArrayList<>();
    for (String s : list(args, i, option)) {
      try {
        int v = Integer.parseInt(s);
        if (v < 1) {
          throw new NumberFormatException();
        }
        values.add(v);
      } catch (NumberFormatException e) {
        throw new UsageException(option + " takes positive whole numbers, got '" + s + "'");
      }
    }
    return values;
  }

  private static Duration seconds(String[] args, int i, String option) {
    String s = value(args, i, option);
    try {
      double v = Double.parseDouble(s);
      if (!(v > 0) || v > 3600) {
        throw new NumberFormatException();
      }
      return Duration.ofMillis(Math.round(v * 1000));
    } catch (NumberFormatException e) {
      throw new UsageException(option + " takes seconds between 0 and 3600, got '" + s + "'");
    }
  }

  /** A bad command line; the message is printed with the usage. */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }
}
