package dev.idem.benchmarks;

import dev.idem.lab.NotesServiceProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The HTTP part of the benchmarks: throughput and CPU per request of the notes service in four
 * variants, each a process of its own on a database of its own, under a closed-loop Java load
 * client on loopback:
 *
 * <ul>
 *   <li>without Idem ({@code idem.enabled=false}): {@code POST /notes} with no key;
 *   <li>the floor: the same process settings plus {@code notes.benchmark.floor-endpoint=true}, {@code
 *       POST /bench/floor/notes}, an idempotent create written by hand (one key read, then the note
 *       and the key row in one transaction, key last);
 *   <li>with Idem, transactional ({@code idem.mode=transactional}) and lease ({@code idem.mode=lease
 *       idem.in-progress=fail-fast}): {@code POST /notes} with a new key each time (create) or one
 *       of 200 keys completed beforehand (replay); the floor has both workloads too.
 * </ul>
 *
 * <p>Each database regime ({@code --db}: SQLite; PostgreSQL with its defaults or with {@code
 * synchronous_commit = off} on every variant's database; MariaDB with its defaults or with {@code
 * innodb_flush_log_at_trx_commit = 2}) is an interleaved A/B comparison: its four services stay up
 * side by side while, at each client count, {@code --rounds} rounds run every workload once, each
 * round in an order rotated by one (see {@link Rounds#order}), so no service always goes first. A
 * cell is reported as the median over its rounds with the spread (minimum to maximum); its ratio to
 * "create, without Idem" is the median of the per-round ratios ({@link Rounds#summarize}).
 *
 * <p>CPU per request ({@link ProcCpu}): over each run's measured window, the service JVM's user +
 * system time and the database server's (PostgreSQL's processes with the postmaster's reaped
 * children, or the MariaDB server; SQLite runs inside the service), divided by the requests measured.
 * The CSV keeps one row per run. On PostgreSQL, where the server loads {@code pg_stat_statements}
 * ({@link PgStatements}), each run's statements on the variant's database are read before and after
 * it, and the report lists them per workload; the targets against the floor ({@link #floorTargets})
 * give each create's CPU and statement time beside the floor's.
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --out docs/reports
 * }</pre>
 *
 * writes {@code docs/reports/benchmarks-http.md} and {@code docs/data/http.csv}; {@code --help} lists
 * the options. The service jar is {@code --jar} (default {@code
 * examples/notes-service/target/notes-service.jar}, relative to the working directory).
 *
 * <p>{@code --stack webflux} runs the same comparison on the WebFlux notes service ({@code
 * examples/notes-webflux}, Reactor Netty and R2DBC), PostgreSQL only: without Idem, its reactive
 * floor, Idem in transactional mode on R2DBC (the service's default) and in lease mode ({@code
 * idem.mode=lease idem.in-progress=fail-fast idem.store=r2dbc}); it writes {@code
 * docs/reports/benchmarks-webflux.md} and {@code docs/reports/data/webflux.csv}:
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --stack webflux --out docs/reports
 * }</pre>
 *
 * <p>{@link GrpcLoad} measures the same workloads over gRPC with this class's closed-loop runner
 * ({@link #run}), its {@link Run} and its per-cell summaries, which are package-visible for it.
 */
public final class HttpLoad {

  /** The documented command, also at the top of the report. */
  static final String COMMAND =
      "./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --out docs/reports";

  /**
   * A notes service that the benchmark runs: the Spring MVC one (JDBC) or the WebFlux one (R2DBC).
   *
   * @param name the {@code --stack} value
   * @param jar the service jar's default path, relative to the working directory
   * @param report the report's file name in the output folder
   * @param csv the CSV's path in the output folder
   * @param regimes the database regimes it runs on, the default of {@code --db}
   * @param command the documented command, at the top of the report
   */
  record Stack(String name, String jar, String report, String csv, List<String> regimes, String command) {

    boolean webflux() {
      return name.equals("webflux");
    }

    /** Starts one variant of the service on the database of {@code jdbcUrl}. */
    NotesServiceProcess start(Path jar, Path dir, String variant, boolean idem, String jdbcUrl, List<String> arguments)
        throws IOException, InterruptedException {
      return webflux() ? NotesServiceProcess.startWebFlux(jar, dir, variant, idem, jdbcUrl, arguments)
          : NotesServiceProcess.start(jar, dir, variant, idem, jdbcUrl, arguments);
    }

    /** The arguments of Idem's transactional variant: the WebFlux service runs it by default beside R2DBC. */
    List<String> transactional() {
      return webflux() ? List.of() : List.of("--idem.mode=transactional");
    }

    /** The arguments of Idem's lease variant, the keys in the service's own database. */
    List<String> lease() {
      return webflux() ? List.of("--idem.mode=lease", "--idem.in-progress=fail-fast", "--idem.store=r2dbc")
          : List.of("--idem.mode=lease", "--idem.in-progress=fail-fast");
    }
  }

  static final Stack SERVLET = new Stack("servlet", "examples/notes-service/target/notes-service.jar", "benchmarks-http.md",
      "data/http.csv", List.of("sqlite", "postgres", "postgres-async", "mariadb", "mariadb-async"), COMMAND);

  static final Stack WEBFLUX = new Stack("webflux", "examples/notes-webflux/target/notes-webflux.jar", "benchmarks-webflux.md",
      "data/webflux.csv", List.of("postgres", "postgres-async"),
      "./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad"
          + " --stack webflux --out docs/reports");

  /** @return the stack of a {@code --stack} value */
  static Stack stack(String name) {
    return switch (name) {
      case "servlet" -> SERVLET;
      case "webflux" -> WEBFLUX;
      default -> throw new IllegalArgumentException("--stack: servlet or webflux; not " + name);
    };
  }

  /** Seconds of the warm-up of every path of every service before the first round (not measured). */
  private static final int SERVICE_WARMUP_SECONDS = 10;

  /**
   * One run: one workload at one client count in one round (from 1), at a position (from 1) in the
   * round's order, with the CPU ticks the service and the database used in its measured window, and
   * (PostgreSQL) the variant's own backends (-1: not measured); {@code sent} counts every request
   * the run sent, its warm-up seconds included.
   */
  record Run(String database, String workload, int clients, int round, int position, double opsPerSecond,
      LatencyStats latency, long errors, long requests, long appTicks, long dbTicks, long ownDbTicks, long sent) {

    Rounds.Sample sample() {
      return new Rounds.Sample(round, opsPerSecond, latency.percentileMillis(50), latency.percentileMillis(99),
          latency.percentileMillis(99.9), errors);
    }

    /** @return the service's CPU per measured request in µs, NaN if not measured */
    double appMicros() {
      return micros(appTicks);
    }

    /** @return the database server's CPU per measured request in µs, NaN if not measured (SQLite: in the app) */
    double dbMicros() {
      return micros(dbTicks);
    }

    /** @return the CPU per measured request of the backends connected to this variant's database (PostgreSQL only), NaN otherwise */
    double ownDbMicros() {
      return micros(ownDbTicks);
    }

    private double micros(long ticks) {
      return ticks < 0 || requests <= 0 ? Double.NaN : ticks * 1e6 / ProcCpu.TICKS_PER_SECOND / requests;
    }
  }

  /**
   * A database regime of the report.
   *
   * @param title the section's heading
   * @param dbCpu what the database CPU column measures: {@code in app}, {@code n/a} or the processes
   * @param notes lines under the heading: the settings, as read back
   */
  record Regime(String title, String dbCpu, List<String> notes) {}

  private HttpLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "HttpLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad [options]",
      description = "The notes service over HTTP without Idem, with a hand-written key-last transaction (the floor) and with"
          + " Idem in transactional and in lease mode, in interleaved rounds: throughput and CPU per request (app and"
          + " database); writes <out>/benchmarks-http.md and <out>/data/http.csv (--stack webflux: <out>/benchmarks-webflux.md"
          + " and <out>/data/webflux.csv).")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs/reports", description = "Output folder (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--stack", paramLabel = "STACK", defaultValue = "servlet",
        description = "servlet: the Spring MVC notes service (JDBC); webflux: the WebFlux notes service (R2DBC, PostgreSQL"
            + " only) (default: ${DEFAULT-VALUE}).")
    String stack;

    @Option(names = "--jar", paramLabel = "PATH",
        description = "The notes service jar (default: examples/notes-service/target/notes-service.jar, with --stack webflux"
            + " examples/notes-webflux/target/notes-webflux.jar).")
    @Nullable Path jar;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3",
        description = "Rounds per database and client count; each runs every workload once, the order rotated"
            + " from round to round (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seconds", paramLabel = "N", defaultValue = "10",
        description = "Measured seconds per run; CPU is counted in clock ticks (normally 10 ms), so short runs give coarse CPU per request"
            + " (default: ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1",
        description = "Seconds of each run before its measured window, not measured (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--clients", split = ",", paramLabel = "LIST", defaultValue = "1,4,16",
        description = "Client counts, comma-separated (default: ${DEFAULT-VALUE}).")
    List<Integer> clients;

    @Option(names = "--db", split = ",", paramLabel = "LIST",
        description = "Database regimes, comma-separated: sqlite, postgres (server defaults), postgres-async"
            + " (synchronous_commit = off on every variant's database), mariadb (defaults), mariadb-async (SET GLOBAL"
            + " innodb_flush_log_at_trx_commit = 2 while it runs, then restored) (default: all five; with --stack webflux"
            + " postgres,postgres-async, the only ones it runs).")
    @Nullable List<String> databases;

    @Option(names = "--postgres-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL admin URL (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = "--mariadb-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:mariadb://127.0.0.1:3306/?user=root",
        description = "MariaDB admin URL; a database per variant is created and dropped afterwards (default: ${DEFAULT-VALUE}).")
    String mariadbUrl;

    @Option(names = "--note", paramLabel = "TEXT",
        description = "A sentence for the report's header, such as what else ran on the machine meanwhile (default: none).")
    @Nullable String note;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }


  /**
   * @param args see {@code --help}: {@code --out DIR}, {@code --stack servlet|webflux}, {@code --jar PATH}, {@code --rounds N}, {@code --seconds N},
   *     {@code --warmup N}, {@code --clients LIST}, {@code --db LIST}, {@code --postgres-url URL}, {@code --mariadb-url URL}
   * @throws Exception when the services cannot be started or the report cannot be written
   */
  public static void main(String[] args) throws Exception {
    Args a = new Args();
    CommandLine cl = new CommandLine(a);
    Stack stack = SERVLET;
    try {
      cl.parseArgs(args);
      if (a.rounds < 1 || a.seconds < 1 || a.warmup < 0 || a.clients.isEmpty() || a.clients.stream().anyMatch(c -> c < 1)) {
        throw new ParameterException(cl, "--rounds, --seconds and every --clients count must be 1 or more, --warmup 0 or more");
      }
      try {
        stack = stack(a.stack);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(cl, e.getMessage());
      }
      if (a.databases == null) {
        a.databases = stack.regimes();
      }
      for (String db : a.databases) {
        if (!stack.regimes().contains(db)) {
          throw new ParameterException(cl, "--db: one or more of " + String.join(", ", stack.regimes()) + " (--stack " + stack.name()
              + "); not " + db);
        }
      }
      if (a.jar == null) {
        a.jar = Path.of(stack.jar());
      }
    } catch (ParameterException e) {
      System.err.println("HttpLoad: " + e.getMessage());
      cl.usage(System.err);
      System.exit(2);
    }
    if (cl.isUsageHelpRequested()) {
      cl.usage(System.out);
      return;
    }
    Path out = a.out;
    Path jar = a.jar;
    List<String> databases = a.databases;
    Stack s = stack;
    if (!Files.isRegularFile(jar)) {
      System.err.println("HttpLoad: the notes service jar is missing: " + jar + " (build with ./mvnw -B -q -DskipTests package)");
      System.exit(2);
    }
    long estimate = databases.size() * ((long) LOADS * SERVICE_WARMUP_SECONDS + (long) a.clients.size() * a.rounds * LOADS
        * (a.warmup + a.seconds));
    System.out.printf(Locale.ROOT, "%d round(s) x %d workloads x %d client count(s) x %d database regime(s), %d+%d s per run:"
        + " about %d min of load, plus the services' start-up%n", a.rounds, LOADS, a.clients.size(), databases.size(),
        a.warmup, a.seconds, (estimate + 59) / 60);
    boolean cpu = ProcCpu.available();
    if (!cpu) {
      System.out.println("note: /proc cannot be read here; the CPU columns will say n/a");
    }
    Instant started = Instant.now();
    String loadBefore = loadAverage();
    Path dir = Files.createTempDirectory("idem-http-bench-");
    List<Run> runs = new ArrayList<>();
    Map<String, Regime> regimes = new LinkedHashMap<>();
    for (String database : databases) {
      switch (database) {
        case "sqlite" -> {
          List<String> notes = new ArrayList<>();
          regimes.put(database, new Regime("SQLite (a file per service, WAL, synchronous=NORMAL)", cpu ? "in app" : "n/a", notes));
          notes.add("In WAL mode with `synchronous=NORMAL` a commit appends to the WAL and does not wait for the disk (the WAL"
              + " is synced at checkpoints only), so SQLite already runs in the regime where the commit's flush hides no CPU;"
              + " there is no separate asynchronous regime. SQLite runs inside the service, so its CPU is in the app column.");
          measure(s, database, jar, dir, a, name -> "jdbc:sqlite:" + dir.resolve(database + "-" + name + ".db")
              + "?journal_mode=WAL&synchronous=NORMAL&busy_timeout=10000", null, null, null, null, runs);
        }
        case "postgres", "postgres-async" -> {
          List<String> why = new ArrayList<>();
          try (PgStatements statements = PgStatements.open(a.postgresUrl, why::add)) {
            PostgresRegime.run("HttpLoad", database, a.postgresUrl, database.endsWith("-async"), cpu, "service", h -> {
              regimes.put(database, new Regime(h.title(), h.dbCpu(), h.notes()));
              if (statements == null) {
                h.notes().add("No statement table for this regime: `pg_stat_statements` cannot be read (" + String.join("; ", why)
                    + "). With `shared_preload_libraries = 'pg_stat_statements'` in the server's configuration (a restart) the"
                    + " report says which statements each variant ran and what they cost.");
              }
            }, (urlFor, setting, dbCpu, ownDb) -> measure(s, database, jar, dir, a, urlFor, setting, dbCpu, ownDb, statements, runs));
          }
        }
        case "mariadb", "mariadb-async" -> mariadb(database, database.endsWith("-async"), jar, dir, a, cpu, regimes, runs);
        default -> throw new IllegalArgumentException("--db: " + database);
      }
    }
    write(s, out, runs, regimes, started, Duration.between(started, Instant.now()), a, List.of(args), loadBefore, loadAverage());
    System.out.println("wrote " + out.resolve(s.report()) + " and " + out.resolve(s.csv()));
  }

  /** @return the 1, 5 and 15 minute load averages of {@code /proc/loadavg}, or {@code n/a} where it cannot be read */
  static String loadAverage() {
    try {
      String[] fields = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return fields.length < 3 ? "n/a" : fields[0] + ", " + fields[1] + ", " + fields[2];
    } catch (IOException | RuntimeException e) {
      return "n/a";
    }
  }

  /** The URL of database {@code db} on the server of admin URL {@code admin}: its path replaced, its query kept. */
  static String withDatabase(String admin, String db) {
    int q = admin.indexOf('?');
    String base = q < 0 ? admin : admin.substring(0, q);
    String query = q < 0 ? "" : admin.substring(q);
    return base.substring(0, base.lastIndexOf('/') + 1) + db + query;
  }

  private static String prefix() {
    return "idem_http_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8) + "_";
  }

  /** @return the first column of the first row of {@code sql} on a new connection to {@code url} */
  static String query(String url, String sql) {
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : "(no row)";
    } catch (SQLException e) {
      return "(cannot read: " + e.getMessage() + ")";
    }
  }

  private static void mariadb(String database, boolean async, Path jar, Path dir, Args a, boolean cpu,
      Map<String, Regime> regimes, List<Run> runs) throws Exception {
    String prefix = prefix();
    List<String> created = new ArrayList<>();
    try (Connection admin = DriverManager.getConnection(a.mariadbUrl);
        Statement st = admin.createStatement()) {
      String version;
      String before;
      try (ResultSet rs = st.executeQuery("SELECT VERSION(), @@GLOBAL.innodb_flush_log_at_trx_commit")) {
        rs.next();
        version = rs.getString(1);
        before = rs.getString(2);
      }
      List<String> notes = new ArrayList<>();
      regimes.put(database, new Regime("MariaDB " + version + (async ? " (a database per service, innodb_flush_log_at_trx_commit = 2)"
          : " (a database per service, default settings)"), cpu ? "the `mariadbd` process" : "n/a", notes));
      Thread restore = null;
      if (async) {
        // a global setting: restored in the finally below, and by a shutdown hook on Ctrl-C
        String old = before;
        restore = new Thread(() -> {
          try (Connection c = DriverManager.getConnection(a.mariadbUrl); Statement s = c.createStatement()) {
            s.execute("SET GLOBAL innodb_flush_log_at_trx_commit = " + Integer.parseInt(old));
          } catch (SQLException | RuntimeException e) {
            System.err.println("HttpLoad: could not restore innodb_flush_log_at_trx_commit = " + old + ": " + e.getMessage());
          }
        }, "restore-innodb-flush");
        Runtime.getRuntime().addShutdownHook(restore);
        st.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2");
        notes.add("`SET GLOBAL innodb_flush_log_at_trx_commit = 2` for this regime, the old value (" + before + ") restored"
            + " afterwards. It is global: the whole server, every database and every other client, while the regime ran. A commit"
            + " writes the redo log to the operating system and flushes it to disk about once a second, instead of at every commit.");
      }
      try {
        List<String> values = measure(SERVLET, database, jar, dir, a, name -> {
          String db = prefix + name.replace('-', '_');
          try {
            st.execute("CREATE DATABASE " + db + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
            created.add(db);
          } catch (SQLException e) {
            throw new IllegalStateException("cannot create database " + db + ": " + e.getMessage(), e);
          }
          return withDatabase(a.mariadbUrl, db);
        }, url -> query(url, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit"), cpu ? ProcCpu.mariadb() : null, null, null, runs);
        notes.add("`innodb_flush_log_at_trx_commit` as a new connection on each service's own URL reads it, after the services"
            + " started: " + String.join(", ", values) + ".");
      } finally {
        try {
          for (String db : created) {
            st.execute("DROP DATABASE IF EXISTS " + db);
          }
        } finally {
          if (restore != null) {
            st.execute("SET GLOBAL innodb_flush_log_at_trx_commit = " + Integer.parseInt(before));
            Runtime.getRuntime().removeShutdownHook(restore);
          }
        }
      }
    } catch (SQLException e) {
      System.err.println("HttpLoad: " + database + " skipped, MariaDB not reachable at " + a.mariadbUrl + ": " + e.getMessage());
    }
  }

  /** How many workloads a round runs. */
  private static final int LOADS = 7;

  /** A workload: its name in the report and the request one client sends, given the request's number. */
  private record Load(String workload, Request request) {}

  /** The path of the floor's endpoint (the notes service with {@code notes.benchmark.floor-endpoint=true}). */
  private static final String FLOOR_PATH = "/bench/floor/notes";

  /**
   * Starts the four services on {@code database}, warms them up, then at each client count runs
   * {@code a.rounds} rounds of every workload, in an order rotated from round to round.
   *
   * @param urlFor the JDBC URL of a variant's database (made for it), given the variant's name
   * @param setting a setting read back from a variant's URL once the services are up, or {@code null}
   * @param dbCpu the database server's CPU, or {@code null} (SQLite, or no /proc)
   * @param ownDb the CPU of the backends on a variant's database, given the variant's name; or {@code null}
   * @param statements PostgreSQL's per-statement counters, read around each measured run into {@link #STATEMENTS}; or {@code null}
   * @return "variant: setting" for each variant, empty without {@code setting}
   */
  private static List<String> measure(Stack stack, String database, Path jar, Path dir, Args a, Function<String, String> urlFor,
      Function<String, String> setting, ProcCpu.Source dbCpu, Function<String, ProcCpu.Source> ownDb,
      @Nullable PgStatements statements, List<Run> runs) throws Exception {
    System.out.println("== " + database);
    Map<String, String> urls = new LinkedHashMap<>();
    for (String name : List.of("without-idem", "floor", "idem-transactional", "idem-lease")) {
      urls.put(name, urlFor.apply(name));
    }
    try (NotesServiceProcess without = stack.start(jar, dir, database + "-without-idem", false,
            urls.get("without-idem"), List.of());
        NotesServiceProcess floor = stack.start(jar, dir, database + "-floor", false,
            urls.get("floor"), List.of("--notes.benchmark.floor-endpoint=true"));
        NotesServiceProcess tx = stack.start(jar, dir, database + "-idem-transactional", true,
            urls.get("idem-transactional"), stack.transactional());
        NotesServiceProcess lease = stack.start(jar, dir, database + "-idem-lease", true,
            urls.get("idem-lease"), stack.lease())) {
      List<String> values = new ArrayList<>();
      if (setting != null) {
        urls.forEach((name, url) -> values.add(name + " " + setting.apply(url)));
      }
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      ProcCpu.Source none = () -> -1;
      Function<String, ProcCpu.Source> own = name -> ownDb == null ? null : ownDb.apply(name);
      List<Variant> variants = List.of(new Variant(FLOOR, floor.base(), FLOOR_PATH, cpuOf(floor), own.apply("floor")),
          new Variant(TX, tx.base(), "/notes", cpuOf(tx), own.apply("idem-transactional")),
          new Variant(LEASE, lease.base(), "/notes", cpuOf(lease), own.apply("idem-lease")));
      for (Variant v : variants) {
        for (int i = 0; i < 200; i++) {
          String key = UUID.randomUUID().toString();
          send(http, v.base(), v.path(), key, "replay-" + i);
          v.completed().add(key);
        }
      }
      record Measured(Load load, ProcCpu.Source app, ProcCpu.Source ownDb, String databaseName) {}
      Map<String, String> variantOf = Map.of(FLOOR, "floor", TX, "idem-transactional", LEASE, "idem-lease");
      List<Measured> loads = new ArrayList<>();
      loads.add(new Measured(new Load(WITHOUT, n -> send(http, without.base(), "/notes", null, "plain-" + n)), cpuOf(without),
          own.apply("without-idem"), PgStatements.databaseOf(urls.get("without-idem"))));
      for (Variant v : variants) {
        String databaseName = PgStatements.databaseOf(urls.get(variantOf.get(v.name())));
        loads.add(new Measured(new Load("create, " + v.name(),
            n -> send(http, v.base(), v.path(), UUID.randomUUID().toString(), "new-" + n)), v.cpu(), v.ownDb(), databaseName));
        loads.add(new Measured(new Load("replay, " + v.name(), n -> v.replay(http, n)), v.cpu(), v.ownDb(), databaseName));
      }
      if (loads.size() != LOADS) {
        throw new IllegalStateException("expected " + LOADS + " workloads, have " + loads.size());
      }
      // The services start cold: warm every path up (JIT, connection pools) before measuring, so
      // the first measured run is not penalised.
      System.out.println("warming up (not measured):");
      for (Measured m : loads) {
        run(database, m.load().workload(), 4, 0, 0, a.warmup, SERVICE_WARMUP_SECONDS, m.load().request(), none, null, null);
      }
      System.out.println("measured:");
      for (int clients : a.clients) {
        List<Run> cell = new ArrayList<>();
        for (int round = 1; round <= a.rounds; round++) {
          List<Measured> order = Rounds.order(loads, round - 1);
          for (int i = 0; i < order.size(); i++) {
            Measured m = order.get(i);
            Map<Long, PgStatements.Stat> before = statements == null ? null : statements.snapshot(m.databaseName());
            Run r = run(database, m.load().workload(), clients, round, i + 1, a.warmup, a.seconds, m.load().request(), m.app(),
                dbCpu, m.ownDb());
            cell.add(r);
            Map<Long, PgStatements.Stat> after = before == null ? null : statements.snapshot(m.databaseName());
            if (after != null) {
              Map<Long, PgStatements.Stat> ran = PgStatements.between(before, after);
              STATEMENTS.merge(statementsKey(database, m.load().workload(), clients), new PgStatements.Cell(r.sent(), ran),
                  (x, y) -> x.plus(y.requests(), y.byQuery()));
            }
          }
        }
        runs.addAll(cell);
        System.out.printf(Locale.ROOT, "  medians over %d round(s) at %d clients:%n", a.rounds, clients);
        for (Measured m : loads) {
          String w = m.load().workload();
          Rounds.Summary s = summary(cell, w, clients);
          System.out.printf(Locale.ROOT, "    %-34s %9.0f ops/s (%.0f-%.0f)  x without %s (%s-%s)  app %s db %s us/req  errors %d%n",
              w, s.ops().median(), s.ops().min(), s.ops().max(), Report.fmtRatio(s.ratio().median()),
              Report.fmtRatio(s.ratio().min()), Report.fmtRatio(s.ratio().max()),
              micros(cpu(cell, w, clients, Run::appMicros).median()), micros(cpu(cell, w, clients, Run::dbMicros).median()),
              s.errors());
        }
      }
      return values;
    }
  }

  /** PostgreSQL's statements per regime, workload and client count ({@link #statementsKey}), summed over the rounds. */
  private static final Map<String, PgStatements.Cell> STATEMENTS = new ConcurrentHashMap<>();

  static String statementsKey(String database, String workload, int clients) {
    return database + "|" + workload + "|" + clients;
  }

  private static ProcCpu.Source cpuOf(NotesServiceProcess service) {
    return ProcCpu.process(service.pid());
  }

  static final String WITHOUT = "create, without Idem";
  static final String FLOOR = "floor";
  static final String TX = "with Idem, transactional";
  static final String LEASE = "with Idem, lease";

  /** A service with idempotency (the floor or the Idem filter), its create path, its CPU and the keys it has completed. */
  private record Variant(String name, URI base, String path, ProcCpu.Source cpu, ProcCpu.Source ownDb, List<String> completed) {
    Variant(String name, URI base, String path, ProcCpu.Source cpu, ProcCpu.Source ownDb) {
      this(name, base, path, cpu, ownDb, new ArrayList<>());
    }

    void replay(HttpClient http, long n) throws IOException, InterruptedException {
      int i = (int) (n % completed.size());
      send(http, base, path, completed.get(i), "replay-" + i);
    }
  }

  @FunctionalInterface
  interface Request {
    void send(long n) throws Exception;
  }

  static void parkUntil(long deadline) {
    for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  static Run run(String database, String workload, int clients, int round, int position, int warmupSeconds,
      int seconds, Request request, ProcCpu.Source app, ProcCpu.Source db, ProcCpu.Source ownDb) throws InterruptedException {
    // the warm-up, then the measured window; each client in a closed loop.
    long warmUpEnd = System.nanoTime() + Duration.ofSeconds(warmupSeconds).toNanos();
    long end = warmUpEnd + Duration.ofSeconds(seconds).toNanos();
    AtomicLong counter = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    Map<String, Integer> reasons = new ConcurrentHashMap<>();
    List<LatencyStats> perClient = new ArrayList<>();
    CountDownLatch done = new CountDownLatch(clients);
    AtomicLong measured = new AtomicLong();
    for (int c = 0; c < clients; c++) {
      LatencyStats stats = new LatencyStats();
      perClient.add(stats);
      Thread t = new Thread(() -> {
        try {
          while (true) {
            long start = System.nanoTime();
            if (start >= end) {
              break;
            }
            try {
              request.send(counter.incrementAndGet());
              long stop = System.nanoTime();
              if (start >= warmUpEnd && stop <= end) {
                stats.recordNanos(stop - start);
                measured.incrementAndGet();
              }
            } catch (Exception e) {
              errors.incrementAndGet();
              reasons.merge(e.getClass().getSimpleName() + ": " + e.getMessage(), 1, Integer::sum);
            }
          }
        } finally {
          done.countDown();
        }
      });
      t.setDaemon(true);
      t.start();
    }
    // CPU over the measured window only: read at its start and at its end
    parkUntil(warmUpEnd);
    long app0 = app.ticks();
    long db0 = db == null ? -1 : db.ticks();
    long own0 = ownDb == null ? -1 : ownDb.ticks();
    parkUntil(end);
    long own1 = ownDb == null ? -1 : ownDb.ticks();
    long db1 = db == null ? -1 : db.ticks();
    long app1 = app.ticks();
    done.await();
    LatencyStats all = new LatencyStats();
    perClient.forEach(all::add);
    long appTicks = app0 < 0 || app1 < 0 ? -1 : app1 - app0;
    long dbTicks = db0 < 0 || db1 < 0 ? -1 : db1 - db0;
    long ownTicks = own0 < 0 || own1 < 0 ? -1 : own1 - own0;
    Run r = new Run(database, workload, clients, round, position, measured.get() / (double) seconds, all, errors.get(),
        measured.get(), appTicks, dbTicks, ownTicks, counter.get());
    String cpu = appTicks < 0 ? "" : String.format(Locale.ROOT, "  app %s db %s%s us/req (%d+%d ticks)", micros(r.appMicros()),
        micros(r.dbMicros()), ownTicks < 0 ? "" : " (own backends " + micros(r.ownDbMicros()) + ")", appTicks, dbTicks);
    System.out.printf(Locale.ROOT, "  %-10s %-34s %3d clients %9.0f ops/s  p50 %7.3f  p99 %7.3f ms%s  errors %d%n",
        round == 0 ? "warm-up" : "round " + round + "." + position, workload, clients, r.opsPerSecond(),
        all.percentileMillis(50), all.percentileMillis(99), cpu, r.errors());
    reasons.forEach((reason, n) -> System.out.printf(Locale.ROOT, "      %d x %s%n", n, reason));
    return r;
  }

  static void send(HttpClient http, URI base, String path, String key, String title) throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"" + title + "\"}"));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    HttpResponse<Void> r = http.send(b.build(), HttpResponse.BodyHandlers.discarding());
    if (r.statusCode() != 201) {
      throw new IOException("POST " + path + " answered " + r.statusCode());
    }
  }

  /** @return the medians and spreads of one workload at one client count over its rounds in {@code runs} */
  static Rounds.Summary summary(List<Run> runs, String workload, int clients) {
    return summary(runs, workload, clients, WITHOUT);
  }

  /** @return the same, its ratio taken to {@code baseline} in the same round */
  static Rounds.Summary summary(List<Run> runs, String workload, int clients, String baseline) {
    List<Rounds.Sample> cell = new ArrayList<>();
    List<Rounds.Sample> base = new ArrayList<>();
    for (Run r : runs) {
      if (r.clients() == clients && r.workload().equals(workload)) {
        cell.add(r.sample());
      }
      if (r.clients() == clients && r.workload().equals(baseline)) {
        base.add(r.sample());
      }
    }
    return Rounds.summarize(cell, base);
  }

  /** The floor's workload that a workload compares with: a create with the floor's create, a replay with its replay. */
  static String floorOf(String workload) {
    return workload.startsWith("replay, ") ? "replay, " + FLOOR : "create, " + FLOOR;
  }

  /** @return the median and range over rounds of a CPU figure of one workload at one client count */
  static Rounds.Spread cpu(List<Run> runs, String workload, int clients, ToDoubleFunction<Run> figure) {
    List<Double> values = new ArrayList<>();
    for (Run r : runs) {
      if (r.clients() == clients && r.workload().equals(workload)) {
        values.add(figure.applyAsDouble(r));
      }
    }
    return Rounds.Spread.of(values);
  }

  /**
   * @return the median and range over rounds of {@code workload}'s CPU figure minus that of "create,
   *     without Idem" in the same round at the same client count
   */
  static Rounds.Spread added(List<Run> runs, String workload, int clients, ToDoubleFunction<Run> figure) {
    return added(runs, workload, clients, figure, WITHOUT);
  }

  /** @return the same against {@code baseline}'s run of the same round */
  static Rounds.Spread added(List<Run> runs, String workload, int clients, ToDoubleFunction<Run> figure, String baseline) {
    List<Double> values = new ArrayList<>();
    for (Run r : runs) {
      if (r.clients() != clients || !r.workload().equals(workload)) {
        continue;
      }
      for (Run b : runs) {
        if (b.clients() == clients && b.round() == r.round() && b.workload().equals(baseline)) {
          values.add(figure.applyAsDouble(r) - figure.applyAsDouble(b));
        }
      }
    }
    return Rounds.Spread.of(values);
  }

  static String micros(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f", v);
  }

  static String signedMicros(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%+.0f", v);
  }

  static String range(Rounds.Spread s, Function<Double, String> f) {
    return s.count() == 0 ? "n/a" : f.apply(s.min()) + " to " + f.apply(s.max());
  }

  static String percent(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f%%", v * 100);
  }

  static final List<String> ORDER = List.of(WITHOUT, "create, " + FLOOR, "replay, " + FLOOR, "create, " + TX,
      "replay, " + TX, "create, " + LEASE, "replay, " + LEASE);

  private static void write(Stack stack, Path out, List<Run> runs, Map<String, Regime> regimes, Instant started, Duration took,
      Args a, List<String> argv, String loadBefore, String loadAfter) throws IOException {
    Files.createDirectories(out.resolve("data"));
    List<List<?>> rows = new ArrayList<>();
    StringBuilder md = new StringBuilder();
    md.append(stack.webflux()
        ? "# WebFlux benchmark: the reactive notes service without Idem, with a hand-written floor and with the Idem WebFilter\n\n"
        : "# HTTP benchmark: the notes service without Idem, with a hand-written floor and with the Idem filter\n\n");
    md.append("Generated by `dev.idem.benchmarks.HttpLoad`; do not edit by hand, run the command again.\n\n");
    md.append("```sh\n").append(stack.command()).append("\n```\n\n");
    long seconds = took.toSeconds();
    md.append("This report: `HttpLoad").append(argv.isEmpty() ? "" : " " + String.join(" ", argv)).append("`, started ")
        .append(started.truncatedTo(ChronoUnit.SECONDS)).append(", took ").append(seconds / 60).append(" min ")
        .append(seconds % 60).append(" s. Load average (1, 5, 15 min, `/proc/loadavg`) at the start: ").append(loadBefore)
        .append("; at the end: ").append(loadAfter).append(".\n\n");
    if (a.note != null) {
      md.append("**Note:** ").append(a.note).append("\n\n");
    }
    if (stack.webflux()) {
      md.append("In each database regime, four processes of `").append(stack.jar()).append("` (Spring WebFlux on Reactor Netty,")
          .append(" R2DBC PostgreSQL), each on a database of its own:\n\n")
          .append("- **without Idem**: `--idem.enabled=false`, `POST /notes` without a key: one auto-commit INSERT of the note.\n")
          .append("- **floor**: `--idem.enabled=false --notes.benchmark.floor-endpoint=true`, `POST ").append(FLOOR_PATH)
          .append("` with an `Idempotency-Key`: the Spring MVC service's floor written reactively (`FloorBenchmarkController`")
          .append(" of notes-webflux, benchmark-only: `DatabaseClient` and a `TransactionalOperator`, nothing blocks). One")
          .append(" primary-key read of `floor_keys` outside a transaction (found: the stored answer if the SHA-256 of the body")
          .append(" matches, else 422); else one transaction: the note, its JSON answer, the key row inserted last (`ON CONFLICT")
          .append(" DO NOTHING`; no row: roll back and answer from the winner's row), commit, 201.\n")
          .append("- **with Idem, transactional**: no mode set: beside the R2DBC `ConnectionFactory` the starter runs")
          .append(" transactional mode (the key, the note and the stored response in one reactive transaction).\n")
          .append("- **with Idem, lease**: `--idem.mode=lease --idem.in-progress=fail-fast --idem.store=r2dbc` (claim, note and")
          .append(" completion in three transactions, the keys in the R2DBC key table of the same database).\n\n");
    } else {
      md.append("In each database regime, four processes of `examples/notes-service/target/notes-service.jar`, each on a database")
          .append(" of its own:\n\n")
          .append("- **without Idem**: `--idem.enabled=false`, `POST /notes` without a key: one auto-commit INSERT of the note.\n")
          .append("- **floor**: `--idem.enabled=false --notes.benchmark.floor-endpoint=true`, `POST ").append(FLOOR_PATH)
          .append("` with an `Idempotency-Key`: the idempotent create an experienced developer writes by hand, in the same")
          .append(" application (`FloorBenchmarkController`, benchmark-only). One primary-key read of `floor_keys` in auto-commit")
          .append(" (found: the stored answer if the SHA-256 of the body matches, else 422); else one transaction: the note, its")
          .append(" JSON answer, the key row inserted last (`ON CONFLICT DO NOTHING`, MariaDB `INSERT IGNORE`; no row: roll back")
          .append(" and answer from the winner's row), commit, 201.\n")
          .append("- **with Idem, transactional**: `--idem.mode=transactional` (the service's default: the key, the note and the")
          .append(" stored response in one transaction).\n")
          .append("- **with Idem, lease**: `--idem.mode=lease --idem.in-progress=fail-fast` (claim, note and completion in three).\n\n");
    }
    md
        .append("Seven workloads: create without Idem (no key); create (a new random key per request) and replay (one of 200")
        .append(" keys completed before the runs, the same body) for the floor, transactional and lease. The four services stay")
        .append(" up side by side for the whole comparison of a regime; closed-loop clients on loopback (java.net.http, HTTP/1.1).\n\n");
    md.append("- Interleaved rounds: every service first warmed up on every path for ").append(SERVICE_WARMUP_SECONDS)
        .append(" s (not measured). Then, at each client count (").append(joinInts(a.clients)).append("), ").append(a.rounds)
        .append(a.rounds == 1 ? " round" : " rounds").append(" ran the ").append(LOADS)
        .append(" workloads once each, in the table's order rotated by one from round to round: round 1 starts with")
        .append(" \"create, without Idem\", round 2 with the second workload, and so on, wrapping around, so no service")
        .append(" always goes first.\n");
    md.append("- Every run: ").append(a.warmup).append(" s of warm-up, then ").append(a.seconds)
        .append(" s measured; ops/s counts the requests that ended inside the measured window.\n");
    md.append("- Per cell: ops/s is the median over the rounds, with their range (min-max); p50, p99 and p99.9 are the")
        .append(" medians of the rounds' percentiles; errors are summed over the rounds.\n");
    md.append("- \"x create without Idem\" is the median of the per-round ratios: each round's ops/s divided by the ops/s of")
        .append(" \"create, without Idem\" in the same round at the same client count, with the range of those ratios. It is")
        .append(" not the ratio of the medians. \"x floor\" is the same against the floor's create (for a create) or the")
        .append(" floor's replay (for a replay).\n");
    md.append("- CPU per request, app and database, in µs: over each run's measured window only. `/proc/<pid>/stat`'s utime +")
        .append(" stime is read at the window's start and at its end; the difference, in clock ticks of 1/")
        .append(ProcCpu.TICKS_PER_SECOND).append(" s (`getconf CLK_TCK`), is divided by the requests measured. **App**: the")
        .append(" service's JVM process (all its threads: HTTP, ").append(stack.webflux() ? "R2DBC" : "JDBC")
        .append(", JIT, GC). **Database**: PostgreSQL: the sum over every")
        .append(" process named `postgres` (backends, WAL writer, checkpointer, ...) plus the postmaster's cutime + cstime (a")
        .append(" backend that exits is reaped by the postmaster and its CPU moves there); MariaDB: the `mariadbd` (or")
        .append(" `mysqld`) process; SQLite runs inside the service (\"in app\"). The database figure is the whole server's,")
        .append(" so any other client of it counts too: the machine and the servers must otherwise be idle. The load client's")
        .append(" own CPU counts in neither. On PostgreSQL the CSV also has the CPU of the backends connected to the variant's")
        .append(" own database alone (`own_backends_*`: processes whose title names it; no WAL writer, no other clients), a")
        .append(" cross-check where the server is not idle. Per cell: the medians over the rounds. \"added CPU per create\" is, per round, a")
        .append(" variant's create minus \"create, without Idem\" of the same round, app and database separately; its median")
        .append(" and range over the rounds. Where `/proc` cannot be read the columns say n/a.\n");
    md.append("- Every run is a row of `").append(stack.csv()).append("` (with its round, its position in the round, its own ratios, its")
        .append(" request count and its CPU ticks), to recompute any of this.\n\n");
    md.append(resolution(runs, a.seconds)).append("\n\n");
    Map<String, String> machine = Machine.describe();
    md.append("Machine: ").append(machine.getOrDefault("cores", "?")).append(" cores, ")
        .append(machine.getOrDefault("memory", "?")).append(", ").append(machine.getOrDefault("JDK", System.getProperty("java.vm.version")))
        .append(". The services, the client and the databases share the machine's cores.\n\n");
    md.append("The target \"HTTP filter overhead <= 10%\" compares a create with Idem with \"create, without Idem\" on the same ")
        .append("database at the same client count: overhead = 1 - x, where x is its \"x create without Idem\" (the median of")
        .append(" the per-round ratios); the per-round range runs from 1 - the highest ratio to 1 - the lowest.")
        .append(stack.webflux() ? "\n" : " The targets against the floor (issue 41) and those of issue 25 are in the last two sections.\n");
    for (Map.Entry<String, Regime> entry : regimes.entrySet()) {
      String database = entry.getKey();
      Regime regime = entry.getValue();
      List<Run> mine = runs.stream().filter(r -> r.database().equals(database)).toList();
      if (mine.isEmpty()) {
        continue;
      }
      md.append("\n## ").append(regime.title()).append(" (`--db ").append(database).append("`)\n\n");
      for (String note : regime.notes()) {
        md.append(note).append("\n\n");
      }
      md.append("Database CPU: ").append(regime.dbCpu()).append(".\n\n");
      md.append("| workload | clients | rounds | ops/s (median) | ops/s min-max | p50 ms | p99 ms | p99.9 ms | errors |")
          .append(" x create without Idem (median) | ratio min-max | x floor (median) | app µs/req | db µs/req |\n");
      md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      boolean inApp = regime.dbCpu().equals("in app");
      for (int clients : a.clients) {
        for (String workload : ORDER) {
          Rounds.Summary s = summary(mine, workload, clients);
          if (s.rounds() == 0) {
            continue;
          }
          Rounds.Summary f = summary(mine, workload, clients, floorOf(workload));
          md.append("| ").append(workload).append(" | ").append(clients).append(" | ").append(s.rounds()).append(" | ")
              .append(Report.fmtOps(s.ops().median())).append(" | ").append(Report.fmtOps(s.ops().min())).append("-")
              .append(Report.fmtOps(s.ops().max())).append(" | ").append(Report.ms(s.p50Millis())).append(" | ")
              .append(Report.ms(s.p99Millis())).append(" | ").append(Report.ms(s.p999Millis())).append(" | ")
              .append(s.errors()).append(" | ").append(Report.fmtRatio(s.ratio().median())).append(" | ")
              .append(Report.fmtRatio(s.ratio().min())).append("-").append(Report.fmtRatio(s.ratio().max())).append(" | ")
              .append(Report.fmtRatio(f.ratio().median())).append(" | ")
              .append(micros(cpu(mine, workload, clients, Run::appMicros).median())).append(" | ")
              .append(inApp ? "in app" : micros(cpu(mine, workload, clients, Run::dbMicros).median())).append(" |\n");
        }
      }
      md.append("\nAdded CPU per create, µs (a variant's create minus \"create, without Idem\" in the same round; median and")
          .append(" per-round range):\n\n");
      md.append("| clients | variant | app (median) | app range | db (median) | db range |\n|---:|---|---:|---:|---:|---:|\n");
      for (int clients : a.clients) {
        for (String variant : List.of(FLOOR, TX, LEASE)) {
          Rounds.Spread app = added(mine, "create, " + variant, clients, Run::appMicros);
          Rounds.Spread dbs = added(mine, "create, " + variant, clients, Run::dbMicros);
          md.append("| ").append(clients).append(" | ").append(variant).append(" | ").append(signedMicros(app.median()))
              .append(" | ").append(range(app, HttpLoad::signedMicros)).append(" | ")
              .append(inApp ? "in app" : signedMicros(dbs.median())).append(" | ")
              .append(inApp ? "in app" : range(dbs, HttpLoad::signedMicros)).append(" |\n");
        }
      }
      md.append("\n| clients | mode | overhead on create (median) | per-round range | verdict |\n|---:|---|---:|---:|---|\n");
      for (int clients : a.clients) {
        for (String mode : List.of(TX, LEASE)) {
          Rounds.Spread r = summary(mine, "create, " + mode, clients).ratio();
          double overhead = 1 - r.median();
          md.append("| ").append(clients).append(" | ").append(mode.substring("with Idem, ".length())).append(" | ")
              .append(percent(overhead)).append(" | ").append(percent(1 - r.max())).append(" to ").append(percent(1 - r.min()))
              .append(" | ").append(Double.isNaN(overhead) ? "not measured" : overhead <= 0.10 ? "**met**" : "missed")
              .append(" |\n");
        }
      }
      statementTable(md, database, a);
      for (Run r : mine) {
        // this round's own ratios: the run over the run without Idem (and the floor's) of the same round and client count
        List<Rounds.Sample> base = sameRound(mine, WITHOUT, r);
        List<Rounds.Sample> floorBase = sameRound(mine, floorOf(r.workload()), r);
        rows.add(List.of(database, r.workload(), r.clients(), r.round(), r.position(), r.opsPerSecond(),
            r.latency().percentileMillis(50), r.latency().percentileMillis(99), r.latency().percentileMillis(99.9), r.errors(),
            Rounds.perRoundRatios(List.of(r.sample()), base).get(0),
            Rounds.perRoundRatios(List.of(r.sample()), floorBase).get(0), r.requests(),
            r.appTicks() < 0 ? "" : r.appTicks(), r.dbTicks() < 0 ? "" : r.dbTicks(), r.appMicros(), r.dbMicros(),
            regime.dbCpu().replace("`", ""), r.ownDbTicks() < 0 ? "" : r.ownDbTicks(), r.ownDbMicros()));
      }
    }
    if (!stack.webflux()) {
      floorTargets(md, runs, regimes, a);
      targets(md, runs, regimes, a);
    }
    if (stack.webflux()) {
      md.append("\nWithout Idem a create is one write transaction (the note). The floor's is one too, with one more statement in")
          .append(" it (the key row, last), after one primary-key read outside it. In transactional mode on R2DBC the filter")
          .append(" opens the transaction first and does everything in it: one primary-key read of the key, the claim (an")
          .append(" insert of the key row \"in progress\"), on PostgreSQL a savepoint, the note, the completion (an update of")
          .append(" the key row with the stored response), commit; in lease mode it is three write transactions (claim, note,")
          .append(" completion). A replay is one primary-key read in every variant; in transactional mode it is read inside the")
          .append(" filter's transaction, so it also begins and ends one. No thread waits for the database: a request holds an")
          .append(" R2DBC connection from the pool (Spring Boot's default, 10) for its statements, and the event loops serve")
          .append(" the other requests meanwhile.\n");
    } else {
      md.append("\nWithout Idem a create is one write transaction (the note). The floor's is one too, with one more statement in")
          .append(" it (the key row, last), after one primary-key read outside it. In transactional mode (the starter's default order,")
          .append(" idem.strategy=key-last) it has the floor's shape: one primary-key read outside it, then the note and the key row")
          .append(" completed with its stored response, last; in lease mode it is three write transactions ")
          .append("(claim, note, completion). SQLite has a single writer, so there a transaction that spans the handler holds ")
          .append("every other writer back; PostgreSQL and MariaDB lock rows, so concurrent creates of distinct keys do not wait on")
          .append(" each other. A replay is one primary-key read in every variant.\n");
    }
    Files.writeString(out.resolve(stack.report()), md.toString());
    Csv.write(out.resolve(stack.csv()),
        List.of("database", "workload", "clients", "round", "position", "ops_per_s", "p50_ms", "p99_ms", "p999_ms", "errors",
            "x_create_without_idem", "x_floor", "requests", "app_cpu_ticks", "db_cpu_ticks", "app_us_per_req",
            "db_us_per_req", "db_cpu", "own_backends_cpu_ticks", "own_backends_us_per_req"), rows);
  }

  static List<Rounds.Sample> sameRound(List<Run> runs, String workload, Run r) {
    return runs.stream().filter(b -> b.workload().equals(workload) && b.clients() == r.clients() && b.round() == r.round())
        .map(Run::sample).toList();
  }

  /** The sentence on the CPU figures' resolution: the fewest ticks and requests of a measured run. */
  static String resolution(List<Run> runs, int secondsPerRun) {
    long fewestRequests = runs.stream().mapToLong(Run::requests).filter(n -> n > 0).min().orElse(0);
    long fewestApp = runs.stream().mapToLong(Run::appTicks).filter(t -> t >= 0).min().orElse(-1);
    long fewestDb = runs.stream().mapToLong(Run::dbTicks).filter(t -> t >= 0).min().orElse(-1);
    String tick = String.format(Locale.ROOT, "%.0f ms", 1000.0 / ProcCpu.TICKS_PER_SECOND);
    StringBuilder sb = new StringBuilder("Resolution of the CPU figures: the kernel counts CPU in ticks of ").append(tick)
        .append(", so a run must last long enough for its CPU difference to be many ticks; ").append(secondsPerRun)
        .append(" s per run here (`--seconds`).");
    if (fewestApp < 0) {
      return sb.append(" No CPU was measured (`/proc` not readable).").toString();
    }
    sb.append(" In this report the smallest difference of a run was ").append(fewestApp).append(" ticks for an app");
    if (fewestDb >= 0) {
      sb.append(" and ").append(fewestDb).append(" for a database server");
    }
    sb.append("; the run with the fewest requests measured ").append(fewestRequests).append(", where one tick is ")
        .append(String.format(Locale.ROOT, "%.1f", 1e6 / ProcCpu.TICKS_PER_SECOND / Math.max(1, fewestRequests)))
        .append(" µs per request: differences of a few of those are noise.");
    return sb.toString();
  }

  /** The client count whose statements a report shows: 4 where it ran, else the largest. */
  static int statementClients(List<Integer> clients) {
    return clients.contains(4) ? 4 : clients.stream().mapToInt(Integer::intValue).max().orElse(1);
  }

  /**
   * The statements each workload ran on a PostgreSQL regime's variant databases, from {@code
   * pg_stat_statements}: calls and executor time per request, at one client count.
   */
  private static void statementTable(StringBuilder md, String database, Args a) {
    int clients = statementClients(a.clients);
    List<String> workloads = ORDER.stream().filter(w -> STATEMENTS.containsKey(statementsKey(database, w, clients))).toList();
    if (workloads.isEmpty()) {
      return;
    }
    md.append("\nStatements per request at ").append(clients).append(" clients (`pg_stat_statements` of each variant's database,")
        .append(" read before and after each run, summed over the rounds, divided by the requests the runs sent; executor")
        .append(" time is wall time in the executor, CPU and any wait for a lock or a read; the commit that ends a transaction,")
        .append(" and its WAL flush, is in no row, so a variant that commits more often costs more than its rows add up to;")
        .append(" the statements of fewer than 0.05 calls a request are left out here, not in the targets' totals):\n\n");
    md.append("| workload | statement | calls/req | µs/call | µs/req |\n|---|---|---:|---:|---:|\n");
    for (String w : workloads) {
      PgStatements.Cell cell = STATEMENTS.get(statementsKey(database, w, clients));
      double total = 0;
      for (PgStatements.Stat st : cell.perRequest(0.05)) {
        double perRequest = st.millis() * 1000 / cell.requests();
        total += perRequest;
        md.append("| ").append(w).append(" | `").append(statementText(st.query())).append("` | ")
            .append(String.format(Locale.ROOT, "%.2f", st.calls() / (double) cell.requests())).append(" | ")
            .append(String.format(Locale.ROOT, "%.1f", st.millis() * 1000 / st.calls())).append(" | ")
            .append(String.format(Locale.ROOT, "%.1f", perRequest)).append(" |\n");
      }
      md.append("| ").append(w).append(" | **all of the above** | | | **").append(String.format(Locale.ROOT, "%.1f", total))
          .append("** |\n");
    }
  }

  /** @return a normalized statement on one line, {@code |} escaped for a table, at most 140 characters */
  static String statementText(String query) {
    String oneLine = query.replaceAll("\\s+", " ").trim().replace("|", "\\|").replace("`", "'");
    return oneLine.length() <= 140 ? oneLine : oneLine.substring(0, 137) + "...";
  }

  /** The executor time per request of a workload's statements at a client count, or NaN when not read. */
  static double statementMicros(String database, String workload, int clients) {
    PgStatements.Cell cell = STATEMENTS.get(statementsKey(database, workload, clients));
    if (cell == null || cell.requests() == 0) {
      return Double.NaN;
    }
    return cell.byQuery().values().stream().mapToDouble(PgStatements.Stat::millis).sum() * 1000 / cell.requests();
  }

  /**
   * The targets of issue 41, against the hand-written floor in the same run: a transactional create
   * at 0.95x the floor's create or more, a lease create at 0.9x the transactional create or more,
   * each replay at the floor's replay or more; with, where a create misses, the CPU it adds over
   * the floor's (app and database) and, on PostgreSQL, the executor time of its statements beside
   * the floor's.
   */
  static void floorTargets(StringBuilder md, List<Run> runs, Map<String, Regime> regimes, Args a) {
    md.append("\n## Targets against the floor (issue 41)\n\n");
    md.append("Each ratio is the median of the per-round ratios of the two workloads' ops/s in the same round at the same")
        .append(" client count (range in parentheses); a verdict goes by the median. Each target has its baseline: the floor's")
        .append(" create or replay, and for the lease create the transactional create. \"CPU over the baseline\" is, per round, the")
        .append(" create's CPU per request minus its baseline's, app and database (median and range); on PostgreSQL")
        .append(" \"statements\" is the executor time per request of all its statements against its baseline's, commits not")
        .append(" included (`pg_stat_statements`,")
        .append(" at the row's client count; the regime's section lists the statements at ").append(statementClients(a.clients))
        .append(" clients). What the app's part is made of is in the profile (docs/reports/profile-http.md, JFR).\n\n");
    md.append("| target | regime | clients | measured | verdict | CPU over the baseline, app / db µs | statements, µs/req |\n")
        .append("|---|---|---:|---|---|---|---|\n");
    record Ratio(String target, String workload, String baseline, double atLeast, boolean cpu) {}
    List<Ratio> targets = List.of(
        new Ratio("transactional create >= 0.95x the floor's create", "create, " + TX, "create, " + FLOOR, 0.95, true),
        new Ratio("lease create >= 0.9x the transactional create", "create, " + LEASE, "create, " + TX, 0.9, true),
        new Ratio("transactional replay >= the floor's replay", "replay, " + TX, "replay, " + FLOOR, 1.0, false),
        new Ratio("lease replay >= the floor's replay", "replay, " + LEASE, "replay, " + FLOOR, 1.0, false));
    for (Ratio t : targets) {
      for (String database : regimes.keySet()) {
        List<Run> mine = runs.stream().filter(r -> r.database().equals(database)).toList();
        boolean inApp = regimes.get(database).dbCpu().equals("in app");
        for (int clients : a.clients) {
          Rounds.Spread r = summary(mine, t.workload(), clients, t.baseline()).ratio();
          if (r.count() == 0) {
            continue;
          }
          boolean met = r.median() >= t.atLeast();
          md.append("| ").append(t.target()).append(" | ").append(database).append(" | ").append(clients).append(" | ")
              .append(Report.fmtRatio(r.median())).append(" (").append(Report.fmtRatio(r.min())).append("-")
              .append(Report.fmtRatio(r.max())).append(") | ").append(met ? "**met**" : "missed").append(" | ");
          if (t.cpu()) {
            Rounds.Spread app = added(mine, t.workload(), clients, Run::appMicros, t.baseline());
            Rounds.Spread db = added(mine, t.workload(), clients, Run::dbMicros, t.baseline());
            md.append(signedMicros(app.median())).append(" (").append(range(app, HttpLoad::signedMicros)).append(") / ")
                .append(inApp ? "in app" : signedMicros(db.median()) + " (" + range(db, HttpLoad::signedMicros) + ")");
          }
          md.append(" | ");
          double mineMicros = statementMicros(database, t.workload(), clients);
          double baseMicros = statementMicros(database, t.baseline(), clients);
          if (!Double.isNaN(mineMicros) && !Double.isNaN(baseMicros)) {
            md.append(String.format(Locale.ROOT, "%.0f against %.0f", mineMicros, baseMicros));
          }
          md.append(" |\n");
        }
      }
    }
  }

  /** The targets of issue 25, each with its measured figure and met or missed. */
  private static void targets(StringBuilder md, List<Run> runs, Map<String, Regime> regimes, Args a) {
    md.append("\n## Targets (issue 25)\n\n");
    md.append("Measured figures are medians over the rounds (per-round range in parentheses); a verdict goes by the median.")
        .append(" This report gives the figures only; why a target is missed belongs in the profile (docs/reports/profile-http.md).\n\n");
    md.append("| target | regime | clients | measured | verdict |\n|---|---|---:|---|---|\n");
    record Ratio(String target, String workload, double atLeast) {}
    List<Ratio> async = List.of(
        new Ratio("transactional create >= 0.75x create without Idem", "create, " + TX, 0.75),
        new Ratio("lease create >= 0.6x create without Idem", "create, " + LEASE, 0.6),
        new Ratio("transactional replay >= 2x create without Idem", "replay, " + TX, 2.0),
        new Ratio("lease replay >= 2x create without Idem", "replay, " + LEASE, 2.0));
    for (Ratio t : async) {
      for (int clients : List.of(1, 4, 16)) {
        ratioTarget(md, runs, regimes, a, t.target(), "postgres-async", t.workload(), clients, t.atLeast());
      }
    }
    for (int clients : List.of(1, 4, 16)) {
      String target = "added CPU per transactional create <= 40 µs app + 40 µs database";
      List<Run> mine = runs.stream().filter(r -> r.database().equals("postgres-async")).toList();
      Rounds.Spread app = added(mine, "create, " + TX, clients, Run::appMicros);
      Rounds.Spread db = added(mine, "create, " + TX, clients, Run::dbMicros);
      md.append("| ").append(target).append(" | postgres-async | ").append(clients).append(" | ");
      if (!regimes.containsKey("postgres-async") || !a.clients.contains(clients) || app.count() == 0 || db.count() == 0) {
        md.append("n/a | not measured |\n");
        continue;
      }
      md.append("app ").append(signedMicros(app.median())).append(" µs (").append(range(app, HttpLoad::signedMicros))
          .append("), db ").append(signedMicros(db.median())).append(" µs (").append(range(db, HttpLoad::signedMicros))
          .append(") | ").append(app.median() <= 40 && db.median() <= 40 ? "**met**" : "missed").append(" |\n");
    }
    ratioTarget(md, runs, regimes, a, "HTTP transactional create >= 0.7x create without Idem", "sqlite", "create, " + TX, 16, 0.7);
    ratioTarget(md, runs, regimes, a, "HTTP lease create >= 0.7x create without Idem", "sqlite", "create, " + LEASE, 16, 0.7);
  }

  private static void ratioTarget(StringBuilder md, List<Run> runs, Map<String, Regime> regimes, Args a, String target,
      String database, String workload, int clients, double atLeast) {
    md.append("| ").append(target).append(" | ").append(database).append(" | ").append(clients).append(" | ");
    List<Run> mine = runs.stream().filter(r -> r.database().equals(database)).toList();
    Rounds.Spread r = summary(mine, workload, clients).ratio();
    if (!regimes.containsKey(database) || !a.clients.contains(clients) || r.count() == 0) {
      md.append("n/a | not measured |\n");
      return;
    }
    md.append(Report.fmtRatio(r.median())).append(" (").append(Report.fmtRatio(r.min())).append("-")
        .append(Report.fmtRatio(r.max())).append(") | ").append(r.median() >= atLeast ? "**met**" : "missed").append(" |\n");
  }

  static String joinInts(List<Integer> values) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < values.size(); i++) {
      sb.append(i == 0 ? "" : i == values.size() - 1 ? " and " : ", ").append(values.get(i));
    }
    return sb.toString();
  }
}
