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
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package && java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --out docs
 * }</pre>
 *
 * writes {@code docs/benchmarks-http.md} and {@code docs/benchmarks/http.csv}; {@code --help} lists
 * the options.
 */
public final class HttpLoad {

  private static final int[] CLIENTS = {1, 4, 16};

  private record Run(String database, String workload, int clients, double opsPerSecond, LatencyStats latency, long errors) {}

  private HttpLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "HttpLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad [options]",
      description = "The notes service over HTTP with and without Idem; writes <out>/benchmarks-http.md.")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs", description = "Output folder (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--jar", paramLabel = "PATH", defaultValue = "examples/notes-service/target/notes-service.jar",
        description = "The notes service jar (default: ${DEFAULT-VALUE}).")
    Path jar;

    @Option(names = "--seconds", paramLabel = "N", defaultValue = "5", description = "Measured seconds per run (default: ${DEFAULT-VALUE}).")
    int seconds;

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
   * @param args see {@code --help}: {@code --out DIR}, {@code --jar PATH}, {@code --seconds N}, {@code --db LIST},
   *     {@code --postgres-url URL}
   * @throws Exception when the services cannot be started or the report cannot be written
   */
  public static void main(String[] args) throws Exception {
    Args a = new Args();
    CommandLine cl = new CommandLine(a);
    try {
      cl.parseArgs(args);
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
    int seconds = a.seconds;
    List<String> databases = a.databases;
    String postgresUrl = a.postgresUrl;
    if (!Files.isRegularFile(jar)) {
      System.err.println("HttpLoad: the notes service jar is missing: " + jar + " (build with ./mvnw -B -q -DskipTests package)");
      System.exit(2);
    }
    Instant started = Instant.now();
    Path dir = Files.createTempDirectory("idem-http-bench-");
    List<Run> runs = new ArrayList<>();
    Map<String, String> versions = new LinkedHashMap<>();
    for (String database : databases) {
      switch (database) {
        case "sqlite" -> {
          versions.put(database, "SQLite (a file per service, WAL, synchronous=NORMAL)");
          measure(database, jar, dir, seconds, name -> "jdbc:sqlite:" + dir.resolve(name + ".db")
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
              measure(database, jar, dir, seconds, name -> {
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
    write(out, runs, versions, started, seconds);
    System.out.println("wrote " + out.resolve("benchmarks-http.md") + " and " + out.resolve("benchmarks/http.csv"));
  }

  /** Starts the three services on {@code database}, warms them up and measures every workload. */
  private static void measure(String database, Path jar, Path dir, int seconds,
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
      // The services start cold: warm every path up (JIT, connection pools) before measuring, so
      // the first measured run is not penalised.
      System.out.println("warming up (not measured):");
      run(database, WITHOUT, 4, 3, http, n -> send(http, without.base(), null, "warm-" + n));
      for (Variant v : variants) {
        run(database, "create, " + v.name(), 4, 3, http, n -> send(http, v.base(), UUID.randomUUID().toString(), "warm-" + n));
        run(database, "replay, " + v.name(), 4, 3, http, n -> v.replay(http, n));
      }
      System.out.println("measured:");
      for (int clients : CLIENTS) {
        runs.add(run(database, WITHOUT, clients, seconds, http, n -> send(http, without.base(), null, "plain-" + n)));
        for (Variant v : variants) {
          runs.add(run(database, "create, " + v.name(), clients, seconds, http,
              n -> send(http, v.base(), UUID.randomUUID().toString(), "new-" + n)));
          runs.add(run(database, "replay, " + v.name(), clients, seconds, http, n -> v.replay(http, n)));
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

  private static Run run(String database, String workload, int clients, int seconds, HttpClient http, Request request)
      throws InterruptedException {
    // 1 s warm-up, then the measured window; each client in a closed loop.
    long warmUpEnd = System.nanoTime() + Duration.ofSeconds(1).toNanos();
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
    Run r = new Run(database, workload, clients, measured.get() / (double) seconds, all, errors.get());
    System.out.printf(Locale.ROOT, "  %-34s %3d clients %9.0f ops/s  p50 %7.3f  p99 %7.3f ms  errors %d%n",
        workload, clients, r.opsPerSecond(), all.percentileMillis(50), all.percentileMillis(99), r.errors());
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

  private static void write(Path out, List<Run> runs, Map<String, String> versions, Instant started, int seconds)
      throws IOException {
    Files.createDirectories(out.resolve("benchmarks"));
    List<List<?>> rows = new ArrayList<>();
    StringBuilder md = new StringBuilder();
    md.append("# HTTP benchmark: the notes service with and without the Idem filter\n\n");
    md.append("Generated by `dev.idem.benchmarks.HttpLoad`; do not edit by hand, run the command again.\n\n");
    md.append("```sh\n./mvnw -B -q -DskipTests package && java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --out docs\n```\n\n");
    md.append("Started ").append(started).append("; on each database, three processes of ")
        .append("`examples/notes-service/target/notes-service.jar`, each on a database of its own: one with ")
        .append("`--idem.enabled=false`, one with `--idem.mode=transactional` (the service's default: the key, the note and the ")
        .append("stored response in one transaction), one with `--idem.mode=lease` (claim, note and completion in three). ")
        .append("Every service warmed up on every path for 3 s first, then ").append(seconds)
        .append(" s measured per run after 1 s of warm-up; closed-loop clients on loopback (java.net.http, HTTP/1.1).\n\n");
    Map<String, String> machine = Machine.describe();
    md.append("Machine: ").append(machine.getOrDefault("cores", "?")).append(" cores, ")
        .append(machine.getOrDefault("memory", "?")).append(", ").append(machine.getOrDefault("JDK", System.getProperty("java.vm.version")))
        .append(". The services, the client and the databases share the machine's cores.\n\n");
    md.append("The target \"HTTP filter overhead <= 10%\" compares a create with Idem with \"create, without Idem\" on the same ")
        .append("database at the same client count: overhead = 1 - (with / without).\n");
    for (Map.Entry<String, String> db : versions.entrySet()) {
      String database = db.getKey();
      List<Run> mine = runs.stream().filter(r -> r.database().equals(database)).toList();
      if (mine.isEmpty()) {
        continue;
      }
      md.append("\n## ").append(db.getValue()).append("\n\n");
      md.append("| workload | clients | ops/s | p50 ms | p99 ms | p99.9 ms | errors | x create without Idem |\n");
      md.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
      for (Run r : mine) {
        double base = mine.stream().filter(b -> b.clients() == r.clients() && b.workload().equals(WITHOUT))
            .mapToDouble(Run::opsPerSecond).findFirst().orElse(Double.NaN);
        md.append(String.format(Locale.ROOT, "| %s | %d | %,.0f | %.3f | %.3f | %.3f | %d | %.2fx |%n",
            r.workload(), r.clients(), r.opsPerSecond(), r.latency().percentileMillis(50), r.latency().percentileMillis(99),
            r.latency().percentileMillis(99.9), r.errors(), r.opsPerSecond() / base));
        rows.add(List.of(database, r.workload(), r.clients(), Math.round(r.opsPerSecond()), r.latency().percentileMillis(50),
            r.latency().percentileMillis(99), r.latency().percentileMillis(99.9), r.errors(), r.opsPerSecond() / base));
      }
      md.append("\n| clients | mode | overhead on create | verdict |\n|---:|---|---:|---|\n");
      for (int clients : CLIENTS) {
        double without = mine.stream().filter(r -> r.clients() == clients && r.workload().equals(WITHOUT))
            .mapToDouble(Run::opsPerSecond).findFirst().orElse(Double.NaN);
        for (String mode : List.of(TX, LEASE)) {
          double with = mine.stream().filter(r -> r.clients() == clients && r.workload().equals("create, " + mode))
              .mapToDouble(Run::opsPerSecond).findFirst().orElse(Double.NaN);
          double overhead = 1 - with / without;
          md.append(String.format(Locale.ROOT, "| %d | %s | %.0f%% | %s |%n", clients, mode.substring("with Idem, ".length()),
              overhead * 100, overhead <= 0.10 ? "**met**" : "missed"));
        }
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
        List.of("database", "workload", "clients", "ops_per_s", "p50_ms", "p99_ms", "p999_ms", "errors", "x_create_without_idem"), rows);
  }
}
