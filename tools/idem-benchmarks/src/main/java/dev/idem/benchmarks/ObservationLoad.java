package dev.idem.benchmarks;

import dev.idem.lab.NotesServiceProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * What Idem's observations cost: the notes service with tracing (Micrometer Tracing's OpenTelemetry
 * bridge, every trace sampled, spans counted and dropped by the exporter:
 * {@code notes.benchmark.tracing=true}) and Idem's observations off ({@code
 * idem.observations.enabled=false}) or on (one {@code idem.attempt} observation and span per
 * attempt, the trace context kept with each key, a replay's linked span), in transactional and in
 * lease mode, side by side on PostgreSQL; creates with a new key and replays of 200 completed keys.
 * Interleaved rounds as {@link HttpLoad}'s (each round's order rotated by one); a cell is the median
 * over the rounds, its ratio the median of the per-round ratios "on / off" of the same mode and
 * workload; CPU per request for the service and for the backends on its database.
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.ObservationLoad --out docs/reports
 * }</pre>
 *
 * writes {@code docs/reports/benchmarks-observations.md}; {@code --help} lists the options.
 */
final class ObservationLoad {

  @Command(name = "ObservationLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.ObservationLoad [options]",
      description = "The notes service with tracing, Idem's observations off and on, side by side on PostgreSQL.")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs/reports", description = "Output folder (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--jar", paramLabel = "PATH", defaultValue = "examples/notes-service/target/notes-service.jar",
        description = "The notes service jar (default: ${DEFAULT-VALUE}).")
    Path jar;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3", description = "Rounds per client count (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seconds", paramLabel = "N", defaultValue = "10", description = "Measured seconds per run (default: ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1",
        description = "Seconds of each run before its measured window (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--clients", split = ",", paramLabel = "LIST", defaultValue = "1,4,16",
        description = "Client counts, each client in a closed loop (default: ${DEFAULT-VALUE}).")
    List<Integer> clients;

    @Option(names = "--db", split = ",", paramLabel = "LIST", defaultValue = "postgres-async",
        description = "Regimes: postgres (server defaults), postgres-async (synchronous_commit = off on each database, where the"
            + " disk stops hiding CPU) (default: ${DEFAULT-VALUE}).")
    List<String> databases;

    @Option(names = "--postgres-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL admin URL; a database per service is created and dropped afterwards (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }

  /** One service: a mode, its observations on or off. */
  private record Service(String mode, boolean observed, URI base, ProcCpu.Source cpu, ProcCpu.Source ownDb, List<String> completed) {
    String name() {
      return mode + ", observations " + (observed ? "on" : "off");
    }
  }

  private record Load(String workload, Service service, HttpLoad.Request request) {}

  private ObservationLoad() {}

  public static void main(String[] args) throws Exception {
    Args a = new Args();
    boolean run = BenchmarkCommand.parse("ObservationLoad", a, args, cl -> {
      if (a.rounds < 1 || a.seconds < 1 || a.warmup < 0 || a.clients.isEmpty() || a.clients.stream().anyMatch(c -> c < 1)) {
        throw new ParameterException(cl, "--rounds, --seconds and every --clients count must be 1 or more, --warmup 0 or more");
      }
      for (String db : a.databases) {
        if (!db.equals("postgres") && !db.equals("postgres-async")) {
          throw new ParameterException(cl, "--db: postgres or postgres-async; not " + db);
        }
      }
    }, () -> a.jar);
    if (!run) {
      return;
    }
    boolean cpu = ProcCpu.available();
    Instant started = Instant.now();
    Path dir = Files.createTempDirectory("idem-observation-bench-");
    StringBuilder report = new StringBuilder();
    for (String database : a.databases) {
      PostgresRegime.run("ObservationLoad", database, a.postgresUrl, database.endsWith("-async"), cpu, "service",
          h -> report.append("\n## PostgreSQL: ").append(h.title()).append("\n\n"),
          (urlFor, setting, dbCpu, ownDb) -> {
            regime(database, a, dir, urlFor, dbCpu, ownDb, report);
            return List.of();
          });
    }
    write(a, report, started, List.of(args));
  }

  private static void regime(String database, Args a, Path dir, Function<String, String> urlFor, ProcCpu.Source dbCpu,
      Function<String, ProcCpu.Source> ownDb, StringBuilder report) throws Exception {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    try (NotesServiceProcess txOff = start(a, dir, database, "transactional", false, urlFor);
        NotesServiceProcess txOn = start(a, dir, database, "transactional", true, urlFor);
        NotesServiceProcess leaseOff = start(a, dir, database, "lease", false, urlFor);
        NotesServiceProcess leaseOn = start(a, dir, database, "lease", true, urlFor)) {
      List<Service> services = List.of(service("transactional", false, txOff, ownDb), service("transactional", true, txOn, ownDb),
          service("lease", false, leaseOff, ownDb), service("lease", true, leaseOn, ownDb));
      List<Load> loads = new ArrayList<>();
      for (Service s : services) {
        for (int i = 0; i < 200; i++) {
          String key = UUID.randomUUID().toString();
          HttpLoad.send(http, s.base(), "/notes", key, "replay-" + i);
          s.completed().add(key);
        }
        loads.add(new Load("create", s, n -> HttpLoad.send(http, s.base(), "/notes", UUID.randomUUID().toString(), "new-" + n)));
        loads.add(new Load("replay", s, n -> {
          int i = (int) (n % s.completed().size());
          HttpLoad.send(http, s.base(), "/notes", s.completed().get(i), "replay-" + i);
        }));
      }
      System.out.println("warming up (not measured):");
      for (Load l : loads) {
        HttpLoad.run(database, l.workload() + ", " + l.service().name(), 4, 0, 0, 0, 10, l.request(), () -> -1, null, null);
      }
      report.append(String.format(Locale.ROOT, "Median of %d rounds of %d s; ratio: observations on / off, the median of the per-round"
          + " ratios of the same mode and workload, in brackets their range. CPU per request in µs: the service, and the backends on"
          + " its database.%n%n", a.rounds, a.seconds));
      report.append("| clients | mode | workload | ops/s off → on | ratio | p99 ms off → on | app µs off → on | db µs off → on |\n");
      report.append("|---:|---|---|---|---|---|---|---|\n");
      for (int clients : a.clients) {
        List<HttpLoad.Run> runs = new ArrayList<>();
        List<Load> measured = new ArrayList<>();
        for (int round = 1; round <= a.rounds; round++) {
          List<Load> order = Rounds.order(loads, round - 1);
          for (int i = 0; i < order.size(); i++) {
            Load l = order.get(i);
            runs.add(HttpLoad.run(database, l.workload() + ", " + l.service().name(), clients, round, i + 1, a.warmup, a.seconds,
                l.request(), l.service().cpu(), dbCpu, l.service().ownDb()));
            measured.add(l);
          }
        }
        for (String mode : List.of("transactional", "lease")) {
          for (String workload : List.of("create", "replay")) {
            List<HttpLoad.Run> off = pick(runs, measured, mode, workload, false);
            List<HttpLoad.Run> on = pick(runs, measured, mode, workload, true);
            Rounds.Summary base = Rounds.summarize(off.stream().map(HttpLoad.Run::sample).toList(), List.of());
            Rounds.Summary sum = Rounds.summarize(on.stream().map(HttpLoad.Run::sample).toList(),
                off.stream().map(HttpLoad.Run::sample).toList());
            report.append(String.format(Locale.ROOT, "| %d | %s | %s | %.0f → %.0f | %.2fx [%.2f-%.2f] | %.2f → %.2f | %s → %s | %s → %s |%n",
                clients, mode, workload, base.ops().median(), sum.ops().median(), sum.ratio().median(), sum.ratio().min(),
                sum.ratio().max(), base.p99Millis(), sum.p99Millis(), cpu(off, HttpLoad.Run::appMicros), cpu(on, HttpLoad.Run::appMicros),
                cpu(off, HttpLoad.Run::ownDbMicros), cpu(on, HttpLoad.Run::ownDbMicros)));
          }
        }
      }
      report.append('\n');
    }
  }

  private static List<HttpLoad.Run> pick(List<HttpLoad.Run> runs, List<Load> loads, String mode, String workload, boolean observed) {
    List<HttpLoad.Run> out = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      Load l = loads.get(i);
      if (l.workload().equals(workload) && l.service().mode().equals(mode) && l.service().observed() == observed) {
        out.add(runs.get(i));
      }
    }
    return out;
  }

  private static String cpu(List<HttpLoad.Run> runs, ToDoubleFunction<HttpLoad.Run> f) {
    double v = Rounds.Spread.of(runs.stream().map(f::applyAsDouble).toList()).median();
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f", v);
  }

  private static Service service(String mode, boolean observed, NotesServiceProcess p, Function<String, ProcCpu.Source> ownDb) {
    return new Service(mode, observed, p.base(), ProcCpu.process(p.pid()), ownDb == null ? null : ownDb.apply(dbName(mode, observed)),
        new ArrayList<>());
  }

  private static String dbName(String mode, boolean observed) {
    return mode + (observed ? "-on" : "-off");
  }

  private static NotesServiceProcess start(Args a, Path dir, String database, String mode, boolean observed,
      Function<String, String> urlFor) throws IOException, InterruptedException {
    List<String> arguments = new ArrayList<>(List.of("--idem.mode=" + mode, "--notes.benchmark.tracing=true",
        "--idem.observations.enabled=" + observed, "--idem.purge.enabled=false"));
    if (mode.equals("lease")) {
      arguments.add("--idem.in-progress=fail-fast");
    }
    return NotesServiceProcess.start(a.jar, dir, database + "-" + dbName(mode, observed), true, urlFor.apply(dbName(mode, observed)),
        arguments);
  }

  private static void write(Args a, StringBuilder body, Instant started, List<String> args) throws IOException {
    StringBuilder r = new StringBuilder("# Benchmarks: what Idem's observations cost\n\n");
    r.append(BenchmarkCommand.writtenBy("ObservationLoad", args, started));
    r.append("Four notes services side by side, each with tracing as Spring Boot configures it with the OpenTelemetry bridge"
        + " (`notes.benchmark.tracing=true`: every trace sampled, a batch span processor, an exporter that counts the spans and"
        + " drops them, so no network is measured): transactional and lease mode, each with `idem.observations.enabled=false`"
        + " (off) and `true` (on: an `idem.attempt` observation and span per attempt, the attempt's trace context kept with its"
        + " key, a replay's linked span). The service has no server observation of its own (no actuator), so the difference is"
        + " Idem's alone. A create sends a new key; a replay one of 200 keys completed beforehand.\n");
    r.append(body);
    Files.createDirectories(a.out);
    Path file = a.out.resolve("benchmarks-observations.md");
    Files.writeString(file, r.toString());
    System.out.println("wrote " + file);
  }
}
