package dev.idem.benchmarks;

import static dev.idem.benchmarks.HttpLoad.FLOOR;
import static dev.idem.benchmarks.HttpLoad.LEASE;
import static dev.idem.benchmarks.HttpLoad.ORDER;
import static dev.idem.benchmarks.HttpLoad.TX;
import static dev.idem.benchmarks.HttpLoad.WITHOUT;

import com.google.protobuf.Struct;
import dev.idem.grpc.IdempotencyClientInterceptor;
import dev.idem.grpc.IdempotencyKeys;
import dev.idem.lab.GrpcLab;
import io.grpc.CallOptions;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
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
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The gRPC part of the benchmarks: throughput and CPU per call of a unary create ({@link
 * GrpcLab#CREATE}, {@code idem.lab.Notes/Create}) over gRPC on Netty (grpc-netty-shaded, loopback),
 * in four variants, each a {@link GrpcBenchServer} in a JVM of its own on a database of its own:
 * without Idem, the hand-written floor, Idem's interceptor in transactional and in lease mode. The
 * same seven workloads, interleaved rounds, statistics and CPU accounting as {@link HttpLoad} (whose
 * closed-loop runner and per-cell summaries it uses), with gRPC clients: each client is a thread
 * making blocking unary calls ({@link ClientCalls#blockingUnaryCall}, what a generated blocking stub
 * does) on one channel per server, which all of that server's clients share (one HTTP/2 connection).
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.GrpcLoad --out docs/reports
 * }</pre>
 *
 * writes {@code docs/reports/benchmarks-grpc.md} and {@code docs/data/grpc.csv}; {@code --help} lists
 * the options. The servers run on this JVM's own class path ({@code java.class.path}: the shaded
 * benchmarks jar).
 */
public final class GrpcLoad {

  /** The documented command, also at the top of the report. */
  static final String COMMAND =
      "./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.GrpcLoad --out docs/reports";

  /** Seconds of the warm-up of every workload before the first round (not measured). */
  private static final int SERVER_WARMUP_SECONDS = 10;

  /** How many workloads a round runs. */
  private static final int LOADS = 7;

  /** Keys completed before the runs, per variant, that the replays cycle through. */
  private static final int REPLAY_KEYS = 200;

  private static final List<String> REGIMES = List.of("sqlite", "postgres", "postgres-async");

  private GrpcLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "GrpcLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.GrpcLoad [options]",
      description = "A unary create over gRPC (Netty, loopback) without Idem, with a hand-written key-last transaction (the"
          + " floor) and with Idem's server interceptor in transactional and in lease mode, each server a JVM of its own, in"
          + " interleaved rounds: throughput and CPU per call (server and database); writes <out>/benchmarks-grpc.md and"
          + " <out>/data/grpc.csv.")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs/reports", description = "Output folder (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3",
        description = "Rounds per database and client count; each runs every workload once, the order rotated"
            + " from round to round (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seconds", paramLabel = "N", defaultValue = "10",
        description = "Measured seconds per run; CPU is counted in clock ticks (normally 10 ms), so short runs give coarse CPU per call"
            + " (default: ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1",
        description = "Seconds of each run before its measured window, not measured (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--clients", split = ",", paramLabel = "LIST", defaultValue = "1,4,16",
        description = "Client counts, comma-separated (default: ${DEFAULT-VALUE}).")
    List<Integer> clients;

    @Option(names = "--db", split = ",", paramLabel = "LIST", defaultValue = "sqlite,postgres,postgres-async",
        description = "Database regimes, comma-separated: sqlite, postgres (server defaults), postgres-async"
            + " (synchronous_commit = off on every variant's database) (default: ${DEFAULT-VALUE}).")
    List<String> databases;

    @Option(names = "--postgres-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL admin URL (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }

  /** A database regime of the report: its heading, what its database CPU column measures, its notes. */
  private record Regime(String title, String dbCpu, List<String> notes) {}

  /**
   * @param args see {@code --help}: {@code --out DIR}, {@code --rounds N}, {@code --seconds N}, {@code --warmup N},
   *     {@code --clients LIST}, {@code --db LIST}, {@code --postgres-url URL}
   * @throws Exception when the servers cannot be started or the report cannot be written
   */
  public static void main(String[] args) throws Exception {
    Args a = new Args();
    CommandLine cl = new CommandLine(a);
    try {
      cl.parseArgs(args);
      if (a.rounds < 1 || a.seconds < 1 || a.warmup < 0 || a.clients.isEmpty() || a.clients.stream().anyMatch(c -> c < 1)) {
        throw new ParameterException(cl, "--rounds, --seconds and every --clients count must be 1 or more, --warmup 0 or more");
      }
      for (String db : a.databases) {
        if (!REGIMES.contains(db)) {
          throw new ParameterException(cl, "--db: one or more of " + String.join(", ", REGIMES) + "; not " + db);
        }
      }
    } catch (ParameterException e) {
      System.err.println("GrpcLoad: " + e.getMessage());
      cl.usage(System.err);
      System.exit(2);
    }
    if (cl.isUsageHelpRequested()) {
      cl.usage(System.out);
      return;
    }
    long estimate = a.databases.size() * ((long) LOADS * SERVER_WARMUP_SECONDS + (long) a.clients.size() * a.rounds * LOADS
        * (a.warmup + a.seconds));
    System.out.printf(Locale.ROOT, "%d round(s) x %d workloads x %d client count(s) x %d database regime(s), %d+%d s per run:"
        + " about %d min of load, plus the servers' start-up%n", a.rounds, LOADS, a.clients.size(), a.databases.size(),
        a.warmup, a.seconds, (estimate + 59) / 60);
    boolean cpu = ProcCpu.available();
    if (!cpu) {
      System.out.println("note: /proc cannot be read here; the CPU columns will say n/a");
    }
    Instant started = Instant.now();
    Path dir = Files.createTempDirectory("idem-grpc-bench-");
    List<HttpLoad.Run> runs = new ArrayList<>();
    Map<String, Regime> regimes = new LinkedHashMap<>();
    for (String database : a.databases) {
      if (database.equals("sqlite")) {
        List<String> notes = new ArrayList<>();
        regimes.put(database, new Regime("SQLite (a file per server, WAL, synchronous=NORMAL)", cpu ? "in app" : "n/a", notes));
        notes.add("In WAL mode with `synchronous=NORMAL` a commit does not wait for the disk, so there is no separate"
            + " asynchronous regime. SQLite runs inside the server, so its CPU is in the server column.");
        measure(database, dir, a, name -> "jdbc:sqlite:" + dir.resolve(database + "-" + name + ".db")
            + "?journal_mode=WAL&synchronous=NORMAL&busy_timeout=10000", null, null, null, runs);
      } else {
        PostgresRegime.run("GrpcLoad", database, a.postgresUrl, database.endsWith("-async"), cpu, "server",
            h -> regimes.put(database, new Regime(h.title(), h.dbCpu(), h.notes())),
            (urlFor, setting, dbCpu, ownDb) -> measure(database, dir, a, urlFor, setting, dbCpu, ownDb, runs));
      }
    }
    write(a.out, runs, regimes, started, Duration.between(started, Instant.now()), a, List.of(args));
    System.out.println("wrote " + a.out.resolve("benchmarks-grpc.md") + " and " + a.out.resolve("data/grpc.csv"));
  }

  /** A server of {@link GrpcBenchServer} in a JVM of its own, with the channel its clients share. */
  private static final class ServerProcess implements AutoCloseable {
    private final Process process;
    private final ManagedChannel channel;

    private ServerProcess(Process process, ManagedChannel channel) {
      this.process = process;
      this.channel = channel;
    }

    /** Starts {@code java -cp <this JVM's class path> GrpcBenchServer variant url port} and waits until it accepts connections. */
    static ServerProcess start(Path dir, String name, String variant, String url) throws IOException, InterruptedException {
      int port;
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        port = socket.getLocalPort();
      }
      Path log = dir.resolve(name + ".log");
      Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-cp", System.getProperty("java.class.path"), GrpcBenchServer.class.getName(), variant, url, Integer.toString(port))
          .redirectErrorStream(true).redirectOutput(log.toFile()).start();
      try {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (true) {
          if (!p.isAlive()) {
            throw new IOException("the gRPC server (" + name + ") exited with " + p.exitValue() + "; its log: " + log);
          }
          try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            break; // bound: the server binds once its database is set up
          } catch (IOException notYet) {
            if (System.nanoTime() > deadline) {
              throw new IOException("the gRPC server (" + name + ") did not listen within 90 s; its log: " + log);
            }
            Thread.sleep(100);
          }
        }
      } catch (IOException | InterruptedException | RuntimeException e) {
        p.destroyForcibly();
        throw e;
      }
      NettyChannelBuilder b = NettyChannelBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), port),
          InsecureChannelCredentials.create());
      if (!variant.equals("without-idem")) {
        b.intercept(IdempotencyClientInterceptor.create()); // sends the call option's key as the idempotency-key entry
      }
      return new ServerProcess(p, b.build());
    }

    ProcCpu.Source cpu() {
      return ProcCpu.process(process.pid());
    }

    /** One blocking unary create, keyed when {@code key} is not {@code null}; fails unless it answers an id. */
    void create(String key, Struct request) {
      CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS);
      if (key != null) {
        options = options.withOption(IdempotencyKeys.CALL_OPTION, key);
      }
      if (GrpcLab.idOf(ClientCalls.blockingUnaryCall(channel, GrpcLab.CREATE, options, request)) <= 0) {
        throw new IllegalStateException("the create answered no id");
      }
    }

    @Override
    public void close() throws InterruptedException {
      channel.shutdownNow();
      channel.awaitTermination(10, TimeUnit.SECONDS);
      process.destroy();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  /** A keyed variant (the floor or Idem), its server and the keys it has completed, for the replays. */
  private record Variant(String name, ServerProcess server, ProcCpu.Source ownDb, List<String> completed) {
    void replay(long n) {
      int i = (int) (n % completed.size());
      server.create(completed.get(i), GrpcLab.request("replay-" + i, i));
    }
  }

  /**
   * Starts the four servers on {@code database}, warms them up, then at each client count runs
   * {@code a.rounds} rounds of every workload, in an order rotated from round to round.
   *
   * @return "variant: setting" for each variant, empty without {@code setting}
   */
  private static List<String> measure(String database, Path dir, Args a, Function<String, String> urlFor,
      Function<String, String> setting, ProcCpu.Source dbCpu, Function<String, ProcCpu.Source> ownDb, List<HttpLoad.Run> runs)
      throws Exception {
    System.out.println("== " + database);
    Map<String, String> urls = new LinkedHashMap<>();
    for (String name : GrpcBenchServer.VARIANTS) {
      urls.put(name, urlFor.apply(name));
    }
    try (ServerProcess without = ServerProcess.start(dir, database + "-without-idem", "without-idem", urls.get("without-idem"));
        ServerProcess floor = ServerProcess.start(dir, database + "-floor", "floor", urls.get("floor"));
        ServerProcess tx = ServerProcess.start(dir, database + "-idem-transactional", "idem-transactional",
            urls.get("idem-transactional"));
        ServerProcess lease = ServerProcess.start(dir, database + "-idem-lease", "idem-lease", urls.get("idem-lease"))) {
      List<String> values = new ArrayList<>();
      if (setting != null) {
        urls.forEach((name, url) -> values.add(name + " " + setting.apply(url)));
      }
      Function<String, ProcCpu.Source> own = name -> ownDb == null ? null : ownDb.apply(name);
      List<Variant> variants = List.of(new Variant(FLOOR, floor, own.apply("floor"), new ArrayList<>()),
          new Variant(TX, tx, own.apply("idem-transactional"), new ArrayList<>()),
          new Variant(LEASE, lease, own.apply("idem-lease"), new ArrayList<>()));
      for (Variant v : variants) {
        for (int i = 0; i < REPLAY_KEYS; i++) {
          String key = UUID.randomUUID().toString();
          v.server().create(key, GrpcLab.request("replay-" + i, i));
          v.completed().add(key);
        }
      }
      record Measured(String workload, HttpLoad.Request request, ProcCpu.Source app, ProcCpu.Source ownDb) {}
      List<Measured> loads = new ArrayList<>();
      loads.add(new Measured(WITHOUT, n -> without.create(null, GrpcLab.request("plain", n)), without.cpu(),
          own.apply("without-idem")));
      for (Variant v : variants) {
        loads.add(new Measured("create, " + v.name(), n -> v.server().create(UUID.randomUUID().toString(),
            GrpcLab.request("new", n)), v.server().cpu(), v.ownDb()));
        loads.add(new Measured("replay, " + v.name(), v::replay, v.server().cpu(), v.ownDb()));
      }
      if (loads.size() != LOADS) {
        throw new IllegalStateException("expected " + LOADS + " workloads, have " + loads.size());
      }
      ProcCpu.Source none = () -> -1;
      System.out.println("warming up (not measured):");
      for (Measured m : loads) {
        HttpLoad.run(database, m.workload(), 4, 0, 0, a.warmup, SERVER_WARMUP_SECONDS, m.request(), none, null, null);
      }
      System.out.println("measured:");
      for (int clients : a.clients) {
        List<HttpLoad.Run> cell = new ArrayList<>();
        for (int round = 1; round <= a.rounds; round++) {
          List<Measured> order = Rounds.order(loads, round - 1);
          for (int i = 0; i < order.size(); i++) {
            Measured m = order.get(i);
            cell.add(HttpLoad.run(database, m.workload(), clients, round, i + 1, a.warmup, a.seconds, m.request(), m.app(),
                dbCpu, m.ownDb()));
          }
        }
        runs.addAll(cell);
        System.out.printf(Locale.ROOT, "  medians over %d round(s) at %d clients:%n", a.rounds, clients);
        for (Measured m : loads) {
          Rounds.Summary s = HttpLoad.summary(cell, m.workload(), clients);
          System.out.printf(Locale.ROOT, "    %-34s %9.0f ops/s (%.0f-%.0f)  x without %s (%s-%s)  server %s db %s us/call  errors %d%n",
              m.workload(), s.ops().median(), s.ops().min(), s.ops().max(), Report.fmtRatio(s.ratio().median()),
              Report.fmtRatio(s.ratio().min()), Report.fmtRatio(s.ratio().max()),
              HttpLoad.micros(HttpLoad.cpu(cell, m.workload(), clients, HttpLoad.Run::appMicros).median()),
              HttpLoad.micros(HttpLoad.cpu(cell, m.workload(), clients, HttpLoad.Run::dbMicros).median()), s.errors());
        }
      }
      return values;
    }
  }

  private static void write(Path out, List<HttpLoad.Run> runs, Map<String, Regime> regimes, Instant started, Duration took,
      Args a, List<String> argv) throws IOException {
    Files.createDirectories(out.resolve("data"));
    List<List<?>> rows = new ArrayList<>();
    StringBuilder md = new StringBuilder();
    md.append("# gRPC benchmark: a unary create without Idem, with a hand-written floor and with Idem's interceptor\n\n");
    md.append("Generated by `dev.idem.benchmarks.GrpcLoad`; do not edit by hand, run the command again.\n\n");
    md.append("```sh\n").append(COMMAND).append("\n```\n\n");
    long seconds = took.toSeconds();
    md.append("This report: `GrpcLoad").append(argv.isEmpty() ? "" : " " + String.join(" ", argv)).append("`, started ")
        .append(started.truncatedTo(ChronoUnit.SECONDS)).append(", took ").append(seconds / 60).append(" min ")
        .append(seconds % 60).append(" s.\n\n");
    md.append("The method is `idem.lab.Notes/Create` (`GrpcLab.CREATE` of idem-lab: a unary call, a `google.protobuf.Struct`")
        .append(" `{tag, value}` in and `{id}` out, with ProtoUtils' marshallers), served by grpc-java on a Netty server")
        .append(" (grpc-netty-shaded) bound to the loopback address. In each database regime, four servers")
        .append(" (`dev.idem.benchmarks.GrpcBenchServer`), each a JVM of its own started with `java -cp <the benchmarks jar>")
        .append(" dev.idem.benchmarks.GrpcBenchServer <variant> <jdbc-url> <port>`, on a database of its own through a")
        .append(" HikariCP pool (its defaults: 10 connections):\n\n")
        .append("- **without Idem**: no interceptor, no key; the handler (`GrpcLab.createHandler`) inserts the row with one")
        .append(" auto-commit INSERT.\n")
        .append("- **floor**: the idempotent create written by hand: the `idempotency-key` metadata entry; one primary-key read")
        .append(" of `floor_keys` in auto-commit (found: the stored answer if the SHA-256 of the request's deterministic")
        .append(" serialization matches, else `FAILED_PRECONDITION`); else one transaction: the row, then the key row with")
        .append(" the answer's bytes inserted last (`ON CONFLICT DO NOTHING`; no row: roll back and answer from the winner's")
        .append(" row), commit.\n")
        .append("- **with Idem, transactional**: the same handler behind `IdempotencyServerInterceptor` on")
        .append(" `TransactionalIdempotency.onDataSource` (key table `JdbcIdempotency` with `Strategy.KEY_LAST`, the starter's")
        .append(" default), key required; the handler inserts on `GrpcTransactions.connection()`, so the row and the")
        .append(" completed key commit together.\n")
        .append("- **with Idem, lease**: behind the interceptor on `LeaseIdempotency` (fail-fast) over `JdbcLeaseStore`:")
        .append(" claim, the row in auto-commit, completion.\n\n")
        .append("Seven workloads: create without Idem (no key); create (a new random key per call) and replay (one of ")
        .append(REPLAY_KEYS).append(" keys completed before the runs, the same request) for the floor, transactional and lease.")
        .append(" The four servers stay up side by side for the whole comparison of a regime. Clients: closed loop, each a")
        .append(" thread of the load driver making blocking unary calls (`ClientCalls.blockingUnaryCall`, what a generated")
        .append(" blocking stub does) with a 30 s deadline, on **one channel per server shared by all its clients** (one")
        .append(" HTTP/2 connection, the calls multiplexed on it); the key is sent by `IdempotencyClientInterceptor` from the")
        .append(" call option `IdempotencyKeys.CALL_OPTION`.\n\n");
    md.append("- Interleaved rounds: every server first warmed up on every workload for ").append(SERVER_WARMUP_SECONDS)
        .append(" s with 4 clients (not measured). Then, at each client count (").append(HttpLoad.joinInts(a.clients)).append("), ")
        .append(a.rounds).append(a.rounds == 1 ? " round" : " rounds").append(" ran the ").append(LOADS)
        .append(" workloads once each, in the table's order rotated by one from round to round, so no server always goes")
        .append(" first.\n");
    md.append("- Every run: ").append(a.warmup).append(" s of warm-up, then ").append(a.seconds)
        .append(" s measured; ops/s counts the calls that ended inside the measured window.\n");
    md.append("- Per cell: ops/s is the median over the rounds, with their range (min-max); p50, p99 and p99.9 are the")
        .append(" medians of the rounds' percentiles; errors are summed over the rounds.\n");
    md.append("- \"x create without Idem\" is the median of the per-round ratios: each round's ops/s divided by the ops/s of")
        .append(" \"create, without Idem\" in the same round at the same client count, with the range of those ratios.")
        .append(" \"x floor\" is the same against the floor's create (for a create) or the floor's replay (for a replay).")
        .append(" The table of main ratios under each regime's is built the same way, each against the workload it names,")
        .append(" in the same round.\n");
    md.append("- CPU per call, server and database, in µs: over each run's measured window only, from `/proc/<pid>/stat`'s")
        .append(" utime + stime (clock ticks of 1/").append(ProcCpu.TICKS_PER_SECOND).append(" s) divided by the calls measured.")
        .append(" **Server**: the variant's server JVM (all its threads: Netty, gRPC executor, JDBC, JIT, GC). **Database**:")
        .append(" every process named `postgres` plus the postmaster's cutime + cstime; the whole server's, so other clients")
        .append(" of it count too (the CSV also has the variant's own backends, `own_backends_*`); SQLite runs inside the")
        .append(" server (\"in app\"). The load driver's own CPU counts in neither.\n");
    md.append("- Every run is a row of `data/grpc.csv`, to recompute any of this.\n\n");
    md.append(HttpLoad.resolution(runs, a.seconds)).append("\n\n");
    Map<String, String> machine = Machine.describe();
    md.append("Machine: ").append(machine.getOrDefault("cores", "?")).append(" cores, ")
        .append(machine.getOrDefault("memory", "?")).append(", ").append(machine.getOrDefault("JDK", System.getProperty("java.vm.version")))
        .append(". The servers, the load driver and the database share the machine's cores.\n");
    for (Map.Entry<String, Regime> entry : regimes.entrySet()) {
      String database = entry.getKey();
      Regime regime = entry.getValue();
      List<HttpLoad.Run> mine = runs.stream().filter(r -> r.database().equals(database)).toList();
      if (mine.isEmpty()) {
        continue;
      }
      md.append("\n## ").append(regime.title()).append(" (`--db ").append(database).append("`)\n\n");
      for (String note : regime.notes()) {
        md.append(note).append("\n\n");
      }
      md.append("Database CPU: ").append(regime.dbCpu()).append(".\n\n");
      md.append("| workload | clients | rounds | ops/s (median) | ops/s min-max | p50 ms | p99 ms | p99.9 ms | errors |")
          .append(" x create without Idem (median) | ratio min-max | x floor (median) | x floor min-max | server µs/call |")
          .append(" db µs/call |\n");
      md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      boolean inApp = regime.dbCpu().equals("in app");
      for (int clients : a.clients) {
        for (String workload : ORDER) {
          Rounds.Summary s = HttpLoad.summary(mine, workload, clients);
          if (s.rounds() == 0) {
            continue;
          }
          Rounds.Summary f = HttpLoad.summary(mine, workload, clients, HttpLoad.floorOf(workload));
          md.append("| ").append(workload).append(" | ").append(clients).append(" | ").append(s.rounds()).append(" | ")
              .append(Report.fmtOps(s.ops().median())).append(" | ").append(Report.fmtOps(s.ops().min())).append("-")
              .append(Report.fmtOps(s.ops().max())).append(" | ").append(Report.ms(s.p50Millis())).append(" | ")
              .append(Report.ms(s.p99Millis())).append(" | ").append(Report.ms(s.p999Millis())).append(" | ")
              .append(s.errors()).append(" | ").append(Report.fmtRatio(s.ratio().median())).append(" | ")
              .append(Report.fmtRatio(s.ratio().min())).append("-").append(Report.fmtRatio(s.ratio().max())).append(" | ")
              .append(Report.fmtRatio(f.ratio().median())).append(" | ").append(Report.fmtRatio(f.ratio().min())).append("-")
              .append(Report.fmtRatio(f.ratio().max())).append(" | ")
              .append(HttpLoad.micros(HttpLoad.cpu(mine, workload, clients, HttpLoad.Run::appMicros).median())).append(" | ")
              .append(inApp ? "in app" : HttpLoad.micros(HttpLoad.cpu(mine, workload, clients, HttpLoad.Run::dbMicros).median()))
              .append(" |\n");
        }
      }
      md.append("\nThe main ratios (median of the per-round ratios, range in parentheses):\n\n");
      md.append("| clients | transactional create / floor create | lease create / transactional create |")
          .append(" floor replay / floor create | transactional replay / floor replay | lease replay / floor replay |\n");
      md.append("|---:|---|---|---|---|---|\n");
      for (int clients : a.clients) {
        md.append("| ").append(clients).append(" | ")
            .append(ratio(HttpLoad.summary(mine, "create, " + TX, clients, "create, " + FLOOR).ratio())).append(" | ")
            .append(ratio(HttpLoad.summary(mine, "create, " + LEASE, clients, "create, " + TX).ratio())).append(" | ")
            .append(ratio(HttpLoad.summary(mine, "replay, " + FLOOR, clients, "create, " + FLOOR).ratio())).append(" | ")
            .append(ratio(HttpLoad.summary(mine, "replay, " + TX, clients, "replay, " + FLOOR).ratio())).append(" | ")
            .append(ratio(HttpLoad.summary(mine, "replay, " + LEASE, clients, "replay, " + FLOOR).ratio())).append(" |\n");
      }
      md.append("\nAdded CPU per create, µs (a variant's create minus \"create, without Idem\" in the same round; median and")
          .append(" per-round range):\n\n");
      md.append("| clients | variant | server (median) | server range | db (median) | db range |\n|---:|---|---:|---:|---:|---:|\n");
      for (int clients : a.clients) {
        for (String variant : List.of(FLOOR, TX, LEASE)) {
          Rounds.Spread app = HttpLoad.added(mine, "create, " + variant, clients, HttpLoad.Run::appMicros);
          Rounds.Spread dbs = HttpLoad.added(mine, "create, " + variant, clients, HttpLoad.Run::dbMicros);
          md.append("| ").append(clients).append(" | ").append(variant).append(" | ").append(HttpLoad.signedMicros(app.median()))
              .append(" | ").append(HttpLoad.range(app, HttpLoad::signedMicros)).append(" | ")
              .append(inApp ? "in app" : HttpLoad.signedMicros(dbs.median())).append(" | ")
              .append(inApp ? "in app" : HttpLoad.range(dbs, HttpLoad::signedMicros)).append(" |\n");
        }
      }
      for (HttpLoad.Run r : mine) {
        List<Rounds.Sample> base = HttpLoad.sameRound(mine, WITHOUT, r);
        List<Rounds.Sample> floorBase = HttpLoad.sameRound(mine, HttpLoad.floorOf(r.workload()), r);
        rows.add(List.of(database, r.workload(), r.clients(), r.round(), r.position(), r.opsPerSecond(),
            r.latency().percentileMillis(50), r.latency().percentileMillis(99), r.latency().percentileMillis(99.9), r.errors(),
            Rounds.perRoundRatios(List.of(r.sample()), base).get(0),
            Rounds.perRoundRatios(List.of(r.sample()), floorBase).get(0), r.requests(),
            r.appTicks() < 0 ? "" : r.appTicks(), r.dbTicks() < 0 ? "" : r.dbTicks(), r.appMicros(), r.dbMicros(),
            regime.dbCpu().replace("`", ""), r.ownDbTicks() < 0 ? "" : r.ownDbTicks(), r.ownDbMicros()));
      }
    }
    md.append("\nWithout Idem a create is one write transaction (the row). The floor's and the transactional one's are one")
        .append(" too, with one more statement in it (the key row, last), after one primary-key read outside it; lease mode")
        .append(" makes three (claim, row, completion). A replay is one primary-key read in every variant. Over gRPC")
        .append(" Idem's interceptor also holds a thread of the server's executor while the handler's answer is captured")
        .append(" and stored (see docs/grpc.md).\n");
    Files.writeString(out.resolve("benchmarks-grpc.md"), md.toString());
    Csv.write(out.resolve("data/grpc.csv"),
        List.of("database", "workload", "clients", "round", "position", "ops_per_s", "p50_ms", "p99_ms", "p999_ms", "errors",
            "x_create_without_idem", "x_floor", "calls", "server_cpu_ticks", "db_cpu_ticks", "server_us_per_call",
            "db_us_per_call", "db_cpu", "own_backends_cpu_ticks", "own_backends_us_per_call"), rows);
  }

  private static String ratio(Rounds.Spread r) {
    return r.count() == 0 ? "n/a" : Report.fmtRatio(r.median()) + " (" + Report.fmtRatio(r.min()) + "-"
        + Report.fmtRatio(r.max()) + ")";
  }
}
