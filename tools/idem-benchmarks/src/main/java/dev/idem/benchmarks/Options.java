package dev.idem.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The harness's command line, parsed by picocli like the {@code idem} command. Modes set every
 * size at once; the other options override single sizes (for trying things out: a report made with
 * overrides says so). After {@link #parse(String...)} the plain fields hold the sizes to use. Not
 * thread-safe; parsed once on the main thread and then only read.
 */
@Command(
    name = "LoadHarness",
    customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.LoadHarness [options]",
    description = "Measures Idem's stores against a naive insert, hand-rolled guards and Camel's JDBC"
        + " repository, runs the JMH micro-benchmarks and writes <out>/benchmarks.md.",
    sortOptions = false,
    usageHelpWidth = 110)
final class Options {

  /** How long and how large a run is. */
  enum Mode {
    QUICK, DEFAULT, LONG
  }

  static final List<String> ALL_DATABASES = List.of("sqlite", "postgres", "mariadb", "redis");

  /** {@code --quick} or {@code --long}, not both. */
  static final class ModeOption {
    @Option(names = "--quick", description = "~1-minute smoke run (small sizes; its numbers are not a result).")
    boolean quick;

    @Option(names = "--long", description = "Longer runs and more samples than the default (~1 hour).")
    boolean longRun;
  }

  @ArgGroup(exclusive = true, multiplicity = "0..1")
  private ModeOption modeOption;

  @Option(names = "--db", split = ",", paramLabel = "LIST",
      description = "Backends, comma-separated: sqlite,postgres,mariadb,redis (default all; none: JMH only).")
  private List<String> dbOption;

  @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs/reports",
      description = "Writes DIR/benchmarks.md and DIR/data/*.csv (default: ${DEFAULT-VALUE}).")
  Path out;

  @Option(names = "--no-jmh", description = "Skip the JMH micro-benchmarks.")
  private boolean noJmh;

  @Option(names = "--workloads", split = ",", paramLabel = "LIST",
      description = "Only these workload ids (see the report), comma-separated; add race and key-shape to keep those phases.")
  private List<String> workloadsOption;

  @Option(names = "--postgres-url", paramLabel = "URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
      description = "Admin URL (default: ${DEFAULT-VALUE}).")
  String postgresUrl;

  @Option(names = "--mariadb-url", paramLabel = "URL", defaultValue = "jdbc:mariadb://127.0.0.1:3306/?user=root",
      description = "Admin URL (default: ${DEFAULT-VALUE}).")
  String mariadbUrl;

  @Option(names = "--redis-url", paramLabel = "URL", defaultValue = "redis://127.0.0.1:6379",
      description = "Redis URL (default: ${DEFAULT-VALUE}).")
  String redisUrl;

  @Option(names = "--sqlite-dir", paramLabel = "DIR",
      description = "Where the SQLite file is made (default the system temporary folder).")
  Path sqliteDir;

  @Option(names = "--clients", split = ",", paramLabel = "LIST",
      description = "Client counts of the throughput runs (default 1,4,16,64).")
  private List<Integer> clientsOption;

  @Option(names = "--warmup", paramLabel = "SECONDS", description = "Warm-up per run.")
  private Double warmupOption;

  @Option(names = "--duration", paramLabel = "SECONDS", description = "Measurement per run.")
  private Double durationOption;

  @Option(names = "--race-clients", split = ",", paramLabel = "LIST",
      description = "Client counts of the races (default 4,16,64).")
  private List<Integer> raceClientsOption;

  @Option(names = "--race-rounds", paramLabel = "N", description = "Keys per race.")
  private Integer raceRoundsOption;

  @Option(names = "--shape-preload", paramLabel = "N",
      description = "Records stored before the key-shape runs (default 1000000).")
  private Integer shapePreloadOption;

  @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
  private boolean help;

  Mode mode = Mode.DEFAULT;
  Set<String> databases = new LinkedHashSet<>(ALL_DATABASES);
  boolean jmh = true;
  Set<String> workloads; // null: all

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

  /** @return the usage text, as {@code --help} prints it */
  static String usage() {
    return new CommandLine(new Options()).getUsageMessage();
  }

  /**
   * @param args the command line
   * @return the options, with the mode's sizes and the overrides applied
   * @throws UsageException if the command line is wrong (with a message) or asks for help (without)
   */
  static Options parse(String... args) {
    Options o = new Options();
    CommandLine cl = new CommandLine(o);
    try {
      cl.parseArgs(args);
    } catch (ParameterException e) {
      String message = String.valueOf(e.getMessage());
      throw new UsageException(message.startsWith("Error: ") ? message.substring("Error: ".length()) : message);
    }
    if (cl.isUsageHelpRequested()) {
      throw new UsageException(null);
    }
    o.argv.addAll(Arrays.asList(args));
    o.resolve();
    return o;
  }

  private void resolve() {
    if (modeOption != null) {
      mode = modeOption.quick ? Mode.QUICK : modeOption.longRun ? Mode.LONG : Mode.DEFAULT;
    }
    applyMode();
    jmh = !noJmh;
    if (dbOption != null) {
      databases = new LinkedHashSet<>();
      List<String> dbs = nonBlank(dbOption, "--db");
      if (!dbs.equals(List.of("none"))) { // none: JMH only
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
          databases.add(db);
        }
      }
    }
    if (workloadsOption != null) {
      workloads = new LinkedHashSet<>(nonBlank(workloadsOption, "--workloads"));
      overrides.add("--workloads " + String.join(",", workloads));
    }
    if (clientsOption != null) {
      clients = positive(clientsOption, "--clients");
      overrides.add("--clients " + join(clients));
    }
    if (warmupOption != null) {
      warmup = seconds(warmupOption, "--warmup");
      overrides.add("--warmup " + text(warmupOption));
    }
    if (durationOption != null) {
      measure = seconds(durationOption, "--duration");
      overrides.add("--duration " + text(durationOption));
    }
    if (raceClientsOption != null) {
      raceClients = positive(raceClientsOption, "--race-clients");
      overrides.add("--race-clients " + join(raceClients));
    }
    if (raceRoundsOption != null) {
      raceRounds = positive(List.of(raceRoundsOption), "--race-rounds").get(0);
      overrides.add("--race-rounds " + raceRounds);
    }
    if (shapePreloadOption != null) {
      shapePreload = positive(List.of(shapePreloadOption), "--shape-preload").get(0);
      overrides.add("--shape-preload " + shapePreload);
    }
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

  private static List<String> nonBlank(List<String> values, String option) {
    List<String> items = new ArrayList<>();
    for (String s : values) {
      if (!s.isBlank()) {
        items.add(s.strip());
      }
    }
    if (items.isEmpty()) {
      throw new UsageException(option + " needs at least one item");
    }
    return items;
  }

  private static List<Integer> positive(List<Integer> values, String option) {
    for (int v : values) {
      if (v < 1) {
        throw new UsageException(option + " takes positive whole numbers, got '" + v + "'");
      }
    }
    return List.copyOf(values);
  }

  private static Duration seconds(double v, String option) {
    if (!(v > 0) || v > 3600) {
      throw new UsageException(option + " takes seconds between 0 and 3600, got '" + text(v) + "'");
    }
    return Duration.ofMillis(Math.round(v * 1000));
  }

  private static String join(List<Integer> values) {
    return String.join(",", values.stream().map(String::valueOf).toList());
  }

  private static String text(double seconds) {
    return seconds == Math.rint(seconds) ? Long.toString((long) seconds) : Double.toString(seconds);
  }

  /** A bad command line (with a message, printed with the usage) or a request for help (without). */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }
}
