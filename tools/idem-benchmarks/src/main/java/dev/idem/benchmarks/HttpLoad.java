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
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The HTTP part of the benchmarks: the notes service without the Idem filter ({@code
 * idem.enabled=false}), with it in transactional mode (the service's default) and with it in lease
 * mode ({@code idem.mode=lease}), each on a database of its own (an SQLite file, then a PostgreSQL
 * database), under a closed-loop Java load client on loopback.
 *
 * <ul>
 *   <li>create, without Idem: {@code POST /notes} with no key, to the service without the filter;
 *   <li>create, with Idem (transactional / lease): {@code POST /notes} with a new key each time;
 *   <li>replay, with Idem (transactional / lease): {@code POST /notes} with one of 200 keys already
 *       completed.
 * </ul>
 *
 * <p>An interleaved A/B comparison: the three services of a database stay up side by side while, at
 * each client count, {@code --rounds} rounds run every workload once, each round in an order rotated
 * by one (see {@link Rounds#order}), so no service always goes first. A cell is reported as the
 * median over its rounds with the spread (minimum to maximum); its ratio to "create, without Idem"
 * is the median of the per-round ratios ({@link Rounds#summarize}). The CSV keeps one row per
 * round.
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --out docs
 * }</pre>
 *
 * writes {@code docs/benchmarks-http.md} and {@code docs/benchmarks/http.csv}; {@code --help} lists
 * the options. The service jar is {@code --jar} (default {@code
 * examples/notes-service/target/notes-service.jar}, relative to the working directory).
 */
public final class HttpLoad {

  /** The documented command, also at the top of the report. */
  static final String COMMAND =
      "./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --out docs";

  /** Seconds of the warm-up of every path of every service before the first round (not measured). */
  private static final int SERVICE_WARMUP_SECONDS = 3;

  /** One run: one workload at one client count in one round (from 1), at a position (from 1) in the round's order. */
  private record Run(String database, String workload, int clients, int round, int position, double opsPerSecond,
      LatencyStats latency, long errors) {

    Rounds.Sample sample() {
      return new Rounds.Sample(round, opsPerSecond, latency.percentileMillis(50), latency.percentileMillis(99),
          latency.percentileMillis(99.9), errors);
    }
  }

  private HttpLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "HttpLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad [options]",
      description = "The notes service over HTTP with and without Idem, in interleaved rounds; writes <out>/benchmarks-http.md.")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs", description = "Output folder (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--jar", paramLabel = "PATH", defaultValue = "examples/notes-service/target/notes-service.jar",
        description = "The notes service jar (default: ${DEFAULT-VALUE}).")
    Path jar;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3",
        description = "Rounds per database and client count; each runs every workload once, the order rotated"
            + " from round to round (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seconds", paramLabel = "N", defaultValue = "5", description = "Measured seconds per run (default: ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1",
        description = "Seconds of each run before its measured window, not measured (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--clients", split = ",", paramLabel = "LIST", defaultValue = "1,4,16",
        description = "Client counts, comma-separated (default: ${DEFAULT-VALUE}).")
    List<Integer> clients;

    @Option(names = "--db", split = ",", paramLabel = "LIST", defaultValue = "sqlite,postgres",
        description = "Databases, comma-separated (default: ${DEFAULT-VALUE}).")
    List<String> databases;

    @Option(names = "--postgres-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL admin URL (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }

  /**
   * @param args see {@code --help}: {@code --out DIR}, {@code --jar PATH}, {@code --rounds N}, {@code --seconds N},
   *     {@code --warmup N}, {@code --clients LIST}, {@code --db LIST}, {@code --postgres-url URL}
   * @throws Exception when the services cannot be started or the report cannot be written
   */
  public static void main(String[] args) throws Exception {
    Args a = new Args();
    CommandLine cl = new CommandLine(a);
    try {
      cl.parseArgs(args);
      if (a.rounds < 1 || a.seconds < 1 || a.warmup < 0 || a.clients.isEmpty() || a.clients.stream().anyMatch(c -> c < 1)) {
        throw new ParameterException(cl, "--rounds, --seconds and every --clients count must be 1 or more, --warmup 0 or more");
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
    String postgresUrl = a.postgresUrl;
    if (!Files.isRegularFile(jar)) {
      System.err.println("HttpLoad: the notes service jar is missing: " + jar + " (build with ./mvnw -B -q -DskipTests package)");
      System.exit(2);
    }
    long estimate = databases.size() * ((long) LOADS * SERVICE_WARMUP_SECONDS + (long) a.clients.size() * a.rounds * LOADS
        * (a.warmup + a.seconds));
    System.out.printf(Locale.ROOT, "%d round(s) x %d workloads x %d client count(s) x %d database(s), %d+%d s per run:"
        + " about %d min of load, plus the services' start-up%n", a.rounds, LOADS, a.clients.size(), databases.size(),
        a.warmup, a.seconds, (estimate + 59) / 60);
    Instant started = Instant.now();
    Path dir = Files.createTempDirectory("idem-http-bench-");
    List<Run> runs = new ArrayList<>();
    Map<String, String> versions = new LinkedHashMap<>();
    for (String database : databases) {
      switch (database) {
        case "sqlite" -> {
          versions.put(database, "SQLite (a file per service, WAL, synchronous=NORMAL)");
          measure(database, jar, dir, a, name -> "jdbc:sqlite:" + dir.resolve(name + ".db")
              + "?journal_mode=WAL&synchronous=NORMAL&busy_timeout=10000", runs);
        }
        case "postgres" -> {
          String prefix = "idem_http_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8) + "_";
          List<String> created = new ArrayList<>();
          String base = postgresUrl.substring(0, postgresUrl.lastIndexOf('/') + 1);
          String query = postgresUrl.contains("?") ? postgresUrl.substring(postgresUrl.indexOf('?')) : "";
          try (Connection admin = DriverManager.getConnection(postgresUrl);
              Statement st = admin.createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT version()")) {
              rs.next();
              versions.put(database, rs.getString(1).replaceAll(" on .*", "") + " (a database per service, default settings)");
            }
            try {
              measure(database, jar, dir, a, name -> {
                String db = prefix + name.replace('-', '_');
                try {
                  st.execute("CREATE DATABASE " + db);
                } catch (SQLException e) {
                  throw new IllegalStateException("cannot create database " + db + ": " + e.getMessage(), e);
                }
                created.add(db);
                return base + db + query;
              }, runs);
            } finally {
              for (String db : created) {
                st.execute("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
              }
            }
          } catch (SQLException e) {
            System.err.println("HttpLoad: PostgreSQL skipped, not reachable at " + postgresUrl + ": " + e.getMessage());
          }
        }
        default -> throw new IllegalArgumentException("--db: sqlite or postgres, was " + database);
      }
    }
    write(out, runs, versions, started, Duration.between(started, Instant.now()), a, List.of(args));
    System.out.println("wrote " + out.resolve("benchmarks-http.md") + " and " + out.resolve("benchmarks/http.csv"));
  }

  /** How many workloads a round runs. */
  private static final int LOADS = 5;

  /** A workload: its name in the report and the request one client sends, given the request's number. */
  private record Load(String workload, Request request) {}

  /**
   * Starts the three services on {@code database}, warms them up, then at each client count runs
   * {@code a.rounds} rounds of every workload, in an order rotated from round to round.
   */
  private static void measure(String database, Path jar, Path dir, Args a,
      Function<String, String> urlFor, List<Run> runs) throws Exception {
    System.out.println("== " + database);
    try (NotesServiceProcess without = NotesServiceProcess.start(jar, dir, database + "-without-idem", false,
            urlFor.apply("without-idem"), List.of());
        NotesServiceProcess tx = NotesServiceProcess.start(jar, dir, database + "-idem-transactional", true,
            urlFor.apply("idem-transactional"), List.of("--idem.mode=transactional"));
        NotesServiceProcess lease = NotesServiceProcess.start(jar, dir, database + "-idem-lease", true,
            urlFor.apply("idem-lease"), List.of("--idem.mode=lease", "--idem.in-progress=fail-fast"))) {
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      List<Variant> variants = List.of(new Variant(TX, tx.base()), new Variant(LEASE, lease.base()));
      for (Variant v : variants) {
        for (int i = 0; i < 200; i++) {
          String key = UUID.randomUUID().toString();
          send(http, v.base(), key, "replay-" + i);
          v.completed().add(key);
        }
      }
      List<Load> loads = new ArrayList<>();
      loads.add(new Load(WITHOUT, n -> send(http, without.base(), null, "plain-" + n)));
      for (Variant v : variants) {
        loads.add(new Load("create, " + v.name(), n -> send(http, v.base(), UUID.randomUUID().toString(), "new-" + n)));
        loads.add(new Load("replay, " + v.name(), n -> v.replay(http, n)));
      }
      if (loads.size() != LOADS) {
        throw new IllegalStateException("expected " + LOADS + " workloads, have " + loads.size());
      }
      // The services start cold: warm every path up (JIT, connection pools) before measuring, so
      // the first measured run is not penalised.
      System.out.println("warming up (not measured):");
      for (Load l : loads) {
        run(database, l.workload(), 4, 0, 0, a.warmup, SERVICE_WARMUP_SECONDS, l.request());
      }
      System.out.println("measured:");
      for (int clients : a.clients) {
        List<Run> cell = new ArrayList<>();
        for (int round = 1; round <= a.rounds; round++) {
          List<Load> order = Rounds.order(loads, round - 1);
          for (int i = 0; i < order.size(); i++) {
            Load l = order.get(i);
            cell.add(run(database, l.workload(), clients, round, i + 1, a.warmup, a.seconds, l.request()));
          }
        }
        runs.addAll(cell);
        System.out.printf(Locale.ROOT, "  medians over %d round(s) at %d clients:%n", a.rounds, clients);
        for (Load l : loads) {
          Rounds.Summary s = summary(cell, l.workload(), clients);
          System.out.printf(Locale.ROOT, "    %-34s %9.0f ops/s (%.0f-%.0f)  x without %s (%s-%s)  errors %d%n",
              l.workload(), s.ops().median(), s.ops().min(), s.ops().max(), Report.fmtRatio(s.ratio().median()),
              Report.fmtRatio(s.ratio().min()), Report.fmtRatio(s.ratio().max()), s.errors());
        }
      }
    }
  }

  private static final String WITHOUT = "create, without Idem";
  private static final String TX = "with Idem, transactional";
  private static final String LEASE = "with Idem, lease";

  /** A service with the filter, and the keys it has completed. */
  private record Variant(String name, URI base, List<String> completed) {
    Variant(String name, URI base) {
      this(name, base, new ArrayList<>());
    }

    void replay(HttpClient http, long n) throws IOException, InterruptedException {
      int i = (int) (n % completed.size());
      send(http, base, completed.get(i), "replay-" + i);
    }
  }

  @FunctionalInterface
  private interface Request {
    void send(long n) throws Exception;
  }

  private static Run run(String database, String workload, int clients, int round, int position, int warmupSeconds,
      int seconds, Request request) throws InterruptedException {
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
    done.await();
    LatencyStats all = new LatencyStats();
    perClient.forEach(all::add);
    Run r = new Run(database, workload, clients, round, position, measured.get() / (double) seconds, all, errors.get());
    System.out.printf(Locale.ROOT, "  %-10s %-34s %3d clients %9.0f ops/s  p50 %7.3f  p99 %7.3f ms  errors %d%n",
        round == 0 ? "warm-up" : "round " + round + "." + position, workload, clients, r.opsPerSecond(),
        all.percentileMillis(50), all.percentileMillis(99), r.errors());
    reasons.forEach((reason, n) -> System.out.printf(Locale.ROOT, "      %d x %s%n", n, reason));
    return r;
  }

  private static void send(HttpClient http, URI base, String key, String title) throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve("/notes"))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"" + title + "\"}"));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    HttpResponse<Void> r = http.send(b.build(), HttpResponse.BodyHandlers.discarding());
    if (r.statusCode() != 201) {
      throw new IOException("POST /notes answered " + r.statusCode());
    }
  }

  /** @return the medians and spreads of one workload at one client count over its rounds in {@code runs} */
  private static Rounds.Summary summary(List<Run> runs, String workload, int clients) {
    List<Rounds.Sample> cell = new ArrayList<>();
    List<Rounds.Sample> base = new ArrayList<>();
    for (Run r : runs) {
      if (r.clients() == clients && r.workload().equals(workload)) {
        cell.add(r.sample());
      }
      if (r.clients() == clients && r.workload().equals(WITHOUT)) {
        base.add(r.sample());
      }
    }
    return Rounds.summarize(cell, base);
  }

  private static String percent(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f%%", v * 100);
  }

  private static final List<String> ORDER =
      List.of(WITHOUT, "create, " + TX, "replay, " + TX, "create, " + LEASE, "replay, " + LEASE);

  private static void write(Path out, List<Run> runs, Map<String, String> versions, Instant started, Duration took, Args a,
      List<String> argv) throws IOException {
    Files.createDirectories(out.resolve("benchmarks"));
    List<List<?>> rows = new ArrayList<>();
    StringBuilder md = new StringBuilder();
    md.append("# HTTP benchmark: the notes service with and without the Idem filter\n\n");
    md.append("Generated by `dev.idem.benchmarks.HttpLoad`; do not edit by hand, run the command again.\n\n");
    md.append("```sh\n").append(COMMAND).append("\n```\n\n");
    long seconds = took.toSeconds();
    md.append("This report: `HttpLoad").append(argv.isEmpty() ? "" : " " + String.join(" ", argv)).append("`, started ")
        .append(started.truncatedTo(ChronoUnit.SECONDS)).append(", took ").append(seconds / 60).append(" min ")
        .append(seconds % 60).append(" s.\n\n");
    md.append("On each database, three processes of ")
        .append("`examples/notes-service/target/notes-service.jar`, each on a database of its own: one with ")
        .append("`--idem.enabled=false`, one with `--idem.mode=transactional` (the service's default: the key, the note and the ")
        .append("stored response in one transaction), one with `--idem.mode=lease` (claim, note and completion in three). ")
        .append("The three stay up side by side for the whole comparison; closed-loop clients on loopback (java.net.http, HTTP/1.1).\n\n");
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
        .append(" not the ratio of the medians.\n");
    md.append("- Every run is a row of `benchmarks/http.csv` (with its round, its position in the round and its own ratio),")
        .append(" to recompute any of this.\n\n");
    Map<String, String> machine = Machine.describe();
    md.append("Machine: ").append(machine.getOrDefault("cores", "?")).append(" cores, ")
        .append(machine.getOrDefault("memory", "?")).append(", ").append(machine.getOrDefault("JDK", System.getProperty("java.vm.version")))
        .append(". The services, the client and the databases share the machine's cores.\n\n");
    md.append("The target \"HTTP filter overhead <= 10%\" compares a create with Idem with \"create, without Idem\" on the same ")
        .append("database at the same client count: overhead = 1 - x, where x is its \"x create without Idem\" (the median of")
        .append(" the per-round ratios); the per-round range runs from 1 - the highest ratio to 1 - the lowest.\n");
    for (Map.Entry<String, String> db : versions.entrySet()) {
      String database = db.getKey();
      List<Run> mine = runs.stream().filter(r -> r.database().equals(database)).toList();
      if (mine.isEmpty()) {
        continue;
      }
      md.append("\n## ").append(db.getValue()).append("\n\n");
      md.append("| workload | clients | rounds | ops/s (median) | ops/s min-max | p50 ms | p99 ms | p99.9 ms | errors |")
          .append(" x create without Idem (median) | ratio min-max |\n");
      md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      for (int clients : a.clients) {
        for (String workload : ORDER) {
          Rounds.Summary s = summary(mine, workload, clients);
          if (s.rounds() == 0) {
            continue;
          }
          md.append("| ").append(workload).append(" | ").append(clients).append(" | ").append(s.rounds()).append(" | ")
              .append(Report.fmtOps(s.ops().median())).append(" | ").append(Report.fmtOps(s.ops().min())).append("-")
              .append(Report.fmtOps(s.ops().max())).append(" | ").append(Report.ms(s.p50Millis())).append(" | ")
              .append(Report.ms(s.p99Millis())).append(" | ").append(Report.ms(s.p999Millis())).append(" | ")
              .append(s.errors()).append(" | ").append(Report.fmtRatio(s.ratio().median())).append(" | ")
              .append(Report.fmtRatio(s.ratio().min())).append("-").append(Report.fmtRatio(s.ratio().max())).append(" |\n");
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
      for (Run r : mine) {
        // this round's own ratio: the with-Idem run over the run without Idem of the same round and client count
        List<Rounds.Sample> base = mine.stream()
            .filter(b -> b.workload().equals(WITHOUT) && b.clients() == r.clients() && b.round() == r.round())
            .map(Run::sample).toList();
        rows.add(List.of(database, r.workload(), r.clients(), r.round(), r.position(), r.opsPerSecond(),
            r.latency().percentileMillis(50), r.latency().percentileMillis(99), r.latency().percentileMillis(99.9), r.errors(),
            Rounds.perRoundRatios(List.of(r.sample()), base).get(0)));
      }
    }
    md.append("\nWithout Idem a create is one write transaction (the note). In transactional mode it is one too, with two more ")
        .append("statements in it (the claim and the stored response; on SQLite also a primary-key read before it), and the ")
        .append("transaction spans the handler, from the claim to the commit; in lease mode it is three write transactions ")
        .append("(claim, note, completion). SQLite has a single writer, so there a transaction that spans the handler holds ")
        .append("every other writer back; PostgreSQL locks rows, so concurrent creates of distinct keys do not wait on each ")
        .append("other. A replay is one primary-key read in both modes.\n");
    Files.writeString(out.resolve("benchmarks-http.md"), md.toString());
    Csv.write(out.resolve("benchmarks/http.csv"),
        List.of("database", "workload", "clients", "round", "position", "ops_per_s", "p50_ms", "p99_ms", "p999_ms", "errors",
            "x_create_without_idem"), rows);
  }

  private static String joinInts(List<Integer> values) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < values.size(); i++) {
      sb.append(i == 0 ? "" : i == values.size() - 1 ? " and " : ", ").append(values.get(i));
    }
    return sb.toString();
  }
}
