package dev.idem.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Writes {@code benchmarks.md} and the CSV files beside it ({@code data/*.csv}). */
final class Report {

  /** The one command that builds and produces the full report (also in README.md). */
  static final String COMMAND =
      "./mvnw -B -q -DskipTests package && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.LoadHarness --out docs/reports";

  static final Map<String, String> TITLES = new LinkedHashMap<>();
  static final Map<String, String> DESCRIPTIONS = new LinkedHashMap<>();

  static {
    describe(Workloads.NAIVE, "naive insert",
        "`INSERT INTO bench_naive (tag, payload) VALUES (?, ?) RETURNING id` (MariaDB: the generated key) in auto-commit:"
            + " one statement, no protection. The key goes into `tag`, the 200-byte JSON body into `payload`."
            + " The denominator of every \"x naive\" ratio.");
    describe(Workloads.IDEM_CREATE, "Idem transactional create",
        "Per request: `IdempotencyKey.of` and `Fingerprint.ofJson` of the 200-byte body, then"
            + " `JdbcIdempotency.execute(connection, request, effect)` with the naive INSERT as the effect, returning a 201"
            + " (Location, Content-Type, body `{\"id\":N}`) that is stored. Idem owns the transaction, in the write order"
            + " `Strategy.CLAIM_FIRST` (named; the library's default is `KEY_LAST`, the next row): primary-key lookup, BEGIN (SQLite `BEGIN IMMEDIATE`, MariaDB"
            + " `START TRANSACTION`), claim INSERT, effect INSERT, UPDATE with the response, COMMIT."
            + " A new random UUIDv4 key per request; the key table starts empty in every run.");
    describe(Workloads.IDEM_CREATE_KEY_LAST, "Idem transactional create, key-last",
        "As \"Idem transactional create\", with `JdbcIdempotency.builder().strategy(Strategy.KEY_LAST)`: primary-key"
            + " lookup, BEGIN, effect INSERT, INSERT of the key row completed with its response (an upsert that replaces only"
            + " an expired record), COMMIT. The hand-written key-last transaction below is the same minus the lookup (which"
            + " answers replays without running the effect) and with the connection left in manual-commit mode.");
    describe(Workloads.IDEM_REPLAY, "Idem replay",
        "The key table is bulk-loaded once with completed records; each request retries one of them at random with the same"
            + " body: Idem answers from its one primary-key read and decodes the stored 201. A request that runs the effect or"
            + " does not replay counts as an error.");
    describe(Workloads.LEASE_CREATE, "Idem lease create",
        "`LeaseIdempotency` over `JdbcLeaseStore` (SQL) or `RedisLeaseStore` (Redis), one store per client over the"
            + " client's own connection: claim (SQL: its own transaction, `INSERT ... ON CONFLICT DO NOTHING`, MariaDB a plain"
            + " INSERT; Redis: the claim Lua script), the effect (an in-memory counter per key, no store write), then complete"
            + " (SQL: one conditional UPDATE in auto-commit; Redis: the complete script). New UUIDv4 keys; the table starts empty.");
    describe(Workloads.LEASE_REPLAY, "Idem lease replay",
        "Keys completed once through the lease engine before the runs; each request retries one at random: the claim"
            + " script finds the completed record and returns its stored response.");
    describe(Workloads.CHECK_THEN_INSERT, "check-then-insert, no unique constraint",
        "`SELECT id FROM bench_check WHERE tag = ?`, then the naive INSERT if nothing was found: two auto-commit"
            + " statements on a table whose `tag` column has an ordinary index and no unique constraint. What it costs is"
            + " in the throughput tables; what it lets through is in the race table.");
    describe(Workloads.KEY_LAST, "hand-written key-last transaction (the floor)",
        "The best protected transaction written by hand: the connection stays in manual-commit mode; the effect INSERT,"
            + " then an INSERT of the key row (Idem's table layout and primary key, state COMPLETED, fingerprint and encoded"
            + " 201 response), then COMMIT. A duplicate's key INSERT waits on the primary key and fails; it rolls back (its"
            + " effect with it) and reads the winner's row. Same key validation and fingerprint per request as Idem; no"
            + " lookup first, no claim row, no UPDATE: two writes and one commit.");
    describe(Workloads.CAMEL, "Apache Camel JdbcMessageIdRepository (peer)",
        "camel-sql's `JdbcMessageIdRepository` as Camel's idempotent consumer uses it: one repository per client over"
            + " the client's connection, Camel's own table DDL (`PRIMARY KEY (processorName, messageId)`). `add(key)` runs"
            + " its Spring `TransactionTemplate` transaction (SELECT COUNT(*), INSERT if 0, COMMIT; a duplicate-key failure"
            + " means \"seen\"); when it returns true, the naive INSERT follows in auto-commit. Camel stores no response:"
            + " a duplicate learns \"seen\" but cannot get the first answer back, and the key and the effect commit"
            + " separately. On SQLite the repository's connection uses `transaction_mode=IMMEDIATE`.");
    describe(Workloads.NAIVE_SET, "naive SET (Redis floor)",
        "`SET <prefix>naive:<key> <200-byte body> PX 86400000`: one command, no protection. The denominator of the Redis ratios.");
  }

  private static void describe(String id, String title, String text) {
    TITLES.put(id, title);
    DESCRIPTIONS.put(id, text);
  }

  private final Options o;
  private final Results r;
  private final Map<String, String> machine;
  private final Instant started;
  private final Duration elapsed;
  private final double loadBefore;
  private final double loadAfter;

  Report(Options o, Results r, Map<String, String> machine, Instant started, Duration elapsed, double loadBefore, double loadAfter) {
    this.o = o;
    this.r = r;
    this.machine = machine;
    this.started = started;
    this.elapsed = elapsed;
    this.loadBefore = loadBefore;
    this.loadAfter = loadAfter;
  }

  /** @return the Markdown file written */
  Path write() throws IOException {
    Path dir = o.out;
    Files.createDirectories(dir);
    Path csv = dir.resolve("data");
    Files.createDirectories(csv);
    writeCsv(csv);
    Path md = dir.resolve("benchmarks.md");
    String text = markdown();
    if (Files.exists(md)) {
      text = withKeptSections(text, Files.readString(md));
    }
    Files.writeString(md, text, StandardCharsets.UTF_8);
    return md;
  }

  /**
   * Sections other commands write into {@code benchmarks.md} between {@code <!-- NAME: begin -->}
   * and {@code <!-- NAME: end -->} (OutboxLoad's, the Redis Cluster throughput): kept as they are,
   * in their order, before "What each workload does".
   */
  private static final Pattern KEPT =
      Pattern.compile("<!-- (\\w+): begin -->.*?<!-- \\1: end -->\n?", Pattern.DOTALL);

  static String withKeptSections(String text, String previous) {
    Matcher m = KEPT.matcher(previous);
    StringBuilder kept = new StringBuilder();
    while (m.find()) {
      String section = m.group();
      kept.append(section.endsWith("\n") ? section : section + "\n").append("\n");
    }
    if (kept.length() == 0) {
      return text;
    }
    int at = text.indexOf("## What each workload does");
    return at < 0 ? text + "\n" + kept : text.substring(0, at) + kept + text.substring(at);
  }

  // ---------------------------------------------------------------------------------------------

  String markdown() {
    StringBuilder md = new StringBuilder();
    md.append("# Benchmarks\n\n");
    md.append("Generated by `dev.idem.benchmarks.LoadHarness`; do not edit by hand, run the command again.\n\n");
    if (o.mode == Options.Mode.QUICK) {
      md.append("> **Smoke run (`--quick`).** Tiny sizes and sub-second runs: these numbers check that the harness works;"
          + " they are not results.\n\n");
    }
    if (!o.overrides.isEmpty()) {
      md.append("> This run changed the mode's sizes with `").append(String.join(" ", o.overrides)).append("`.\n\n");
    }
    md.append("```sh\n").append(COMMAND).append("\n```\n\n");
    md.append("This report: `LoadHarness ").append(String.join(" ", o.argv)).append("` (mode ")
        .append(o.mode.name().toLowerCase(Locale.ROOT)).append("), started ")
        .append(started.truncatedTo(ChronoUnit.SECONDS))
        .append(", took ").append(minutes(elapsed)).append(".\n\n");
    md.append("- Every throughput run: ").append(secs(o.warmup)).append(" warm-up, then ").append(secs(o.measure))
        .append(" measured; clients ").append(join(o.clients)).append(", each with its own connection, in a closed loop"
            + " (the next request as soon as the previous one answered). Runs are ordered by client count, all workloads"
            + " of one count back to back, so each ratio compares runs made minutes apart at most.\n");
    md.append("- Races: ").append(o.raceRounds).append(" keys at ").append(join(o.raceClients)).append(" clients.\n");
    md.append("- Key shape: ").append(String.format(Locale.ROOT, "%,d", o.shapePreload))
        .append(" records stored before the runs").append(o.shapePreload < 1_000_000 ? " (**smaller than the 1,000,000 of a full run**)" : "")
        .append("; clients ").append(join(o.shapeClients)).append(".\n");
    md.append("- Replays draw from ").append(String.format(Locale.ROOT, "%,d", o.replayKeys)).append(" completed keys.\n\n");

    machineSection(md);
    targetsSection(md);
    throughputSection(md);
    raceSection(md);
    shapeSection(md);
    jmhSection(md);
    md.append("## HTTP\n\n");
    md.append("The notes service without Idem (`--idem.enabled=false`), with a hand-written key-last transaction (the"
        + " floor) and with the Idempotency-Key filter in transactional and in lease mode, create and replay paths,"
        + " throughput and CPU per request (app and database), on SQLite, PostgreSQL and MariaDB with their defaults and"
        + " with asynchronous commits, is measured by a second command, which writes [benchmarks-http.md](benchmarks-http.md):\n\n"
        + "```sh\njava -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.HttpLoad --out docs/reports\n```\n\n");
    md.append("## gRPC\n\n");
    md.append("The same comparison over gRPC, a unary create (`idem.lab.Notes/Create`) on grpc-java's Netty transport over"
        + " loopback, each variant a server JVM of its own (without Idem, the hand-written floor, Idem's server interceptor in"
        + " transactional and in lease mode), create and replay paths, throughput and CPU per call (server and database), on"
        + " SQLite and on PostgreSQL with its defaults and with `synchronous_commit = off`, is measured by a third command,"
        + " which writes [benchmarks-grpc.md](benchmarks-grpc.md):\n\n"
        + "```sh\njava -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.GrpcLoad --out docs/reports\n```\n\n");
    workloadSection(md);
    notesSection(md);
    return md.toString();
  }

  private void machineSection(StringBuilder md) {
    md.append("## Machine\n\n| what | value |\n|---|---|\n");
    machine.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(cell(v)).append(" |\n"));
    md.append("| load average (1 min) | ").append(String.format(Locale.ROOT, "%.2f at the start, %.2f at the end", loadBefore, loadAfter))
        .append(" |\n\n");
    md.append("The database servers run on the same machine as the clients and share its cores.\n\n");
    md.append("| database | version (from the server) | settings (read back) |\n|---|---|---|\n");
    for (String db : Options.ALL_DATABASES) {
      if (r.versions.containsKey(db)) {
        StringBuilder s = new StringBuilder();
        r.settings.getOrDefault(db, Map.of()).forEach((k, v) -> s.append(s.length() == 0 ? "" : ", ").append(k).append('=').append(v));
        md.append("| ").append(db).append(" | ").append(cell(r.versions.get(db))).append(" | ").append(cell(s.toString())).append(" |\n");
      }
    }
    for (Results.Skipped s : r.skipped) {
      md.append("| ").append(s.database()).append(" | **skipped** | ").append(cell(s.reason())).append(" |\n");
    }
    md.append('\n');
  }

  /** One row of the targets table. */
  record Target(String target, String where, String measured, String verdict) {}

  List<Target> targets() {
    List<Target> t = new ArrayList<>();
    // Against the floor: the best protected transaction written by hand (Workloads.KEY_LAST), not the
    // unprotected naive insert, which no protected create can match (its ratio stays in the "x naive" column).
    for (String db : List.of("sqlite", "postgres", "mariadb")) {
      if (!r.versions.containsKey(db)) {
        continue;
      }
      t.add(ratioTarget("Idem transactional create (default strategy) >= 0.9x the hand-written floor", db,
          Workloads.IDEM_CREATE, Workloads.KEY_LAST, 0.9));
      if (db.equals("postgres")) {
        t.add(ratioTarget("Idem transactional create, key-last >= 0.95x the hand-written floor", db,
            Workloads.IDEM_CREATE_KEY_LAST, Workloads.KEY_LAST, 0.95));
      }
      if (measured(db, Workloads.CAMEL)) {
        t.add(ratioTarget("Idem transactional create >= 1.3x Camel's JDBC repository", db, Workloads.IDEM_CREATE,
            Workloads.CAMEL, 1.3));
      }
    }
    for (String db : List.of("sqlite", "postgres", "mariadb")) {
      if (r.versions.containsKey(db)) {
        t.add(ratioTarget("replay >= 2x create", db, Workloads.IDEM_REPLAY, Workloads.IDEM_CREATE, 2.0));
      }
    }
    if (r.versions.containsKey("redis")) {
      t.add(ratioTarget("replay >= 2x create (lease mode)", "redis", Workloads.LEASE_REPLAY, Workloads.LEASE_CREATE, 2.0));
    }
    Results.Jmh fp = null;
    for (Results.Jmh j : r.jmh) {
      if (j.benchmark().equals("FingerprintBenchmark.ofJson") && j.params().equals("size=1024")) {
        fp = j;
      }
    }
    if (fp == null) {
      t.add(new Target("fingerprint of a 1 KiB JSON body <= 5 us median", "JMH", "not measured"
          + (r.jmhNote == null ? "" : " (" + r.jmhNote + ")"), "not measured"));
    } else {
      double us = fp.p50();
      t.add(new Target("fingerprint of a 1 KiB JSON body <= 5 us median", "JMH", String.format(Locale.ROOT, "%.2f us", us),
          us <= 5.0 ? "met" : "missed"));
    }
    t.add(new Target("HTTP filter overhead <= 10%", "notes service", "see benchmarks-http.md (HttpLoad)", "reported there"));
    return t;
  }

  private Target ratioTarget(String name, String db, String workload, String base, double min) {
    StringBuilder measured = new StringBuilder();
    List<Integer> missed = new ArrayList<>();
    int measuredCount = 0;
    for (int c : o.clients) {
      double ratio = ratio(db, workload, base, c);
      if (measured.length() > 0) {
        measured.append(", ");
      }
      measured.append(c).append(c == 1 ? " client: " : " clients: ").append(Double.isNaN(ratio) ? "n/a" : fmtRatio(ratio));
      if (!Double.isNaN(ratio)) {
        measuredCount++;
        if (ratio < min) {
          missed.add(c);
        }
      }
    }
    String verdict = measuredCount == 0 ? "not measured"
        : missed.isEmpty() ? (measuredCount == o.clients.size() ? "met" : "met where measured")
        : "missed (" + join(missed) + (missed.equals(List.of(1)) ? " client)" : " clients)");
    return new Target(name, db, measured.toString(), verdict);
  }

  /** @return whether this run measured {@code workload} on {@code db} at any client count */
  private boolean measured(String db, String workload) {
    for (Results.Measurement m : r.measurements) {
      if (m.database().equals(db) && m.workload().equals(workload)) {
        return true;
      }
    }
    return false;
  }

  private double ratio(String db, String workload, String base, int clients) {
    Results.Measurement m = r.find(db, workload, clients);
    Results.Measurement b = r.find(db, base, clients);
    if (m == null || b == null || !(b.opsPerSecond() > 0) || Double.isNaN(m.opsPerSecond())) {
      return Double.NaN;
    }
    return m.opsPerSecond() / b.opsPerSecond();
  }

  private void targetsSection(StringBuilder md) {
    md.append("## Targets\n\nJudged on this run's numbers, each ratio between runs of the same database, client count"
        + " and harness run. A target is met only if it holds at every client count. \"The hand-written floor\" is the"
        + " workload \"").append(TITLES.get(Workloads.KEY_LAST)).append("\" (`").append(Workloads.KEY_LAST)
        .append("`): the cheapest protected create, so it bounds what any engine can reach; the naive insert has no"
            + " protection and is only the \"x naive\" column of the throughput tables.\n\n");
    md.append("| target | where | measured | verdict |\n|---|---|---|---|\n");
    for (Target t : targets()) {
      md.append("| ").append(t.target()).append(" | ").append(t.where()).append(" | ").append(t.measured()).append(" | ")
          .append(t.verdict().startsWith("met") ? "**" + t.verdict() + "**" : t.verdict()).append(" |\n");
    }
    md.append('\n');
  }

  private void throughputSection(StringBuilder md) {
    md.append("## Throughput and latency\n\nops/s: operations that ended inside the measured window, divided by its"
        + " length. Latencies in milliseconds, of successful operations. \"x naive\": ops/s divided by the naive"
        + " baseline's (naive insert; naive SET on Redis) at the same client count in this run.\n\n");
    for (String db : Options.ALL_DATABASES) {
      List<Results.Measurement> rows = new ArrayList<>();
      for (Results.Measurement m : r.measurements) {
        if (m.database().equals(db)) {
          rows.add(m);
        }
      }
      if (rows.isEmpty()) {
        continue;
      }
      String base = db.equals("redis") ? Workloads.NAIVE_SET : Workloads.NAIVE;
      md.append("### ").append(r.versions.getOrDefault(db, db)).append("\n\n");
      md.append("| workload | clients | ops/s | p50 ms | p99 ms | p99.9 ms | errors | x naive |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
      List<String> errors = new ArrayList<>();
      for (String w : TITLES.keySet()) {
        for (Results.Measurement m : rows) {
          if (!m.workload().equals(w)) {
            continue;
          }
          md.append("| ").append(TITLES.get(w)).append(" | ").append(m.clients()).append(" | ").append(fmtOps(m.opsPerSecond()))
              .append(" | ").append(ms(m.p50Millis())).append(" | ").append(ms(m.p99Millis())).append(" | ")
              .append(ms(m.p999Millis())).append(" | ").append(m.errors()).append(" | ")
              .append(fmtRatio(ratio(db, w, base, m.clients()))).append(" |\n");
          if (m.firstError() != null) {
            errors.add(TITLES.get(w) + ", " + m.clients() + " clients: " + m.firstError());
          }
        }
      }
      md.append('\n');
      firstErrors(md, "run", errors);
    }
  }

  /** Lists the first error of each run or race that had one, if any did. */
  private static void firstErrors(StringBuilder md, String what, List<String> errors) {
    if (errors.isEmpty()) {
      return;
    }
    md.append("First error of each ").append(what).append(" that had one:\n\n");
    for (String e : errors) {
      md.append("- ").append(cell(e)).append('\n');
    }
    md.append('\n');
  }

  private void raceSection(StringBuilder md) {
    if (r.races.isEmpty()) {
      return;
    }
    md.append("## Duplicates when clients race on one key\n\nFor each of ").append(o.raceRounds)
        .append(" new keys, every client waits at a barrier and then sends that same key at once. Afterwards the effects"
            + " are counted in the store (rows per key; lease mode: the in-memory counter). duplicates = effects - keys"
            + " with an effect; missing = keys with no effect at all. The naive insert has no protection, so every"
            + " attempt is an effect: it shows the size of the race.\n\n");
    md.append("| database | workload | clients | keys | attempts | effects | duplicates | missing | errors |\n"
        + "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    List<String> errors = new ArrayList<>();
    for (Results.Race x : r.races) {
      md.append("| ").append(x.database()).append(" | ").append(TITLES.getOrDefault(x.workload(), x.workload())).append(" | ")
          .append(x.clients()).append(" | ").append(x.rounds()).append(" | ").append(x.attempts()).append(" | ")
          .append(x.effects()).append(" | ").append(x.duplicates() > 0 && !x.workload().equals(Workloads.NAIVE) ? "**" + x.duplicates() + "**" : x.duplicates())
          .append(" | ").append(x.missing()).append(" | ").append(x.errors()).append(" |\n");
      if (x.firstError() != null) {
        errors.add(x.database() + ", " + TITLES.getOrDefault(x.workload(), x.workload()) + ", " + x.clients() + " clients: " + x.firstError());
      }
    }
    md.append('\n');
    firstErrors(md, "race", errors);
  }

  private void shapeSection(StringBuilder md) {
    if (r.shapes.isEmpty()) {
      return;
    }
    md.append("## Key shape: random UUIDv4 vs time-ordered UUIDv7\n\nIdem transactional create (as above) on a key table that"
        + " already holds ").append(String.format(Locale.ROOT, "%,d", o.shapePreload))
        .append(" completed records of the same shape, bulk-loaded before the runs (PostgreSQL COPY, MariaDB multi-row"
            + " INSERT, SQLite one batched transaction; v4 keys sorted for the load, v7 keys ascending with timestamps"
            + " ending a minute before the run), then new keys of that shape. The table keeps its records across the"
            + " client counts. \"v7 / v4\": ops/s of v7 divided by v4 at the same client count.");
    if (o.shapePreload < 1_000_000) {
      md.append(" **This run stored fewer records than a full run's 1,000,000.**");
    }
    md.append("\n\n| database | keys | clients | records before | load s | ops/s | p50 ms | p99 ms | p99.9 ms | errors | v7 / v4 | table + indexes |\n"
        + "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (Results.Shape s : r.shapes) {
      Results.Measurement m = s.run();
      String ratio = "";
      if (s.shape().equals(Keys.Shape.UUID_V7.label())) {
        for (Results.Shape v4 : r.shapes) {
          if (v4.database().equals(s.database()) && v4.shape().equals(Keys.Shape.UUID_V4.label())
              && v4.run().clients() == m.clients() && v4.run().opsPerSecond() > 0) {
            ratio = fmtRatio(m.opsPerSecond() / v4.run().opsPerSecond());
          }
        }
      }
      md.append("| ").append(s.database()).append(" | ").append(s.shape()).append(" | ").append(m.clients()).append(" | ")
          .append(String.format(Locale.ROOT, "%,d", s.preloaded())).append(" | ")
          .append(String.format(Locale.ROOT, "%.1f", s.preloadSeconds())).append(" | ").append(fmtOps(m.opsPerSecond()))
          .append(" | ").append(ms(m.p50Millis())).append(" | ").append(ms(m.p99Millis())).append(" | ")
          .append(ms(m.p999Millis())).append(" | ").append(m.errors()).append(" | ").append(ratio).append(" | ")
          .append(s.tableBytes() < 0 ? "n/a" : String.format(Locale.ROOT, "%.0f MiB", s.tableBytes() / 1048576.0)).append(" |\n");
    }
    md.append('\n');
  }

  private void jmhSection(StringBuilder md) {
    md.append("## Micro-benchmarks (JMH 1.37)\n\n");
    if (r.jmh.isEmpty()) {
      md.append("Not run").append(r.jmhNote == null ? "" : ": " + r.jmhNote).append(".\n\n");
      return;
    }
    md.append("Forks ").append(o.jmhForks).append(", warm-up ").append(o.jmhWarmupIterations).append(" x ")
        .append(secs(o.jmhWarmupTime)).append(", measurement ").append(o.jmhIterations).append(" x ")
        .append(secs(o.jmhIterationTime)).append(", `-Xms1g -Xmx1g`. Mode `sample` times single calls (p50 is the"
            + " median); `avgt` is the mean time per call. Bodies are nested JSON with unsorted members"
            + " (`JsonBodies`). Run `java -jar tools/idem-benchmarks/target/benchmarks.jar` for JMH on its own (any JMH"
            + " options).\n\n");
    md.append("| benchmark | params | mode | score | error (99.9%) | unit | p50 | p99 |\n|---|---|---|---:|---:|---|---:|---:|\n");
    for (Results.Jmh j : r.jmh) {
      md.append("| ").append(j.benchmark()).append(" | ").append(j.params()).append(" | ").append(j.mode()).append(" | ")
          .append(num(j.score())).append(" | ").append(Double.isNaN(j.error()) ? "" : num(j.error())).append(" | ")
          .append(j.unit()).append(" | ").append(Double.isNaN(j.p50()) ? "" : num(j.p50())).append(" | ")
          .append(Double.isNaN(j.p99()) ? "" : num(j.p99())).append(" |\n");
    }
    md.append('\n');
  }

  private void workloadSection(StringBuilder md) {
    md.append("## What each workload does\n\n");
    md.append("Every SQL workload writes the same effect: one row `(tag = key, payload = the 200-byte JSON body)` in a"
        + " table of its own, created empty before each run. Each client has one connection of its own, opened with the"
        + " set-up of the tests (`JdbcTarget`: SQLite WAL and `busy_timeout` 10 s, plus `synchronous=NORMAL`; PostgreSQL"
        + " `lock_timeout` 10 s; MariaDB `innodb_lock_wait_timeout` 10 s); Redis clients one Jedis connection each."
        + " Requests are for scope (`bench-user`, `POST /notes`).\n\n");
    for (Map.Entry<String, String> e : DESCRIPTIONS.entrySet()) {
      md.append("- **").append(TITLES.get(e.getKey())).append("** (`").append(e.getKey()).append("`): ").append(e.getValue()).append('\n');
    }
    md.append('\n');
  }

  private void notesSection(StringBuilder md) {
    md.append("## Notes\n\n");
    md.append("- Percentiles come from HdrHistogram 2.2.2 (one per client thread, merged): 3 significant digits, so a"
        + " reported value is at most 0.1% above the exact sample, in constant memory whatever the number of operations."
        + " Latency is the time a client waited for its own request (closed loop; no correction for coordinated"
        + " omission): queueing at high client counts shows as lower ops/s and higher latency.\n");
    md.append("- Ratios compare runs of one harness run on one database only; numbers from different runs or machines"
        + " are not comparable. Nothing here was tuned to pass a target.\n");
    md.append("- Each database is created for the run (`idem_bench_<random>`, a fresh SQLite file, a Redis key prefix)"
        + " and dropped at its end.\n");
    md.append("- CSV files with every number: `data/throughput.csv`, `data/races.csv`,"
        + " `data/key-shape.csv`, `data/jmh.csv`, `data/targets.csv`, `data/environment.csv`.\n");
  }

  // ---------------------------------------------------------------------------------------------

  private void writeCsv(Path dir) throws IOException {
    List<List<?>> rows = new ArrayList<>();
    for (Results.Measurement m : r.measurements) {
      String base = m.database().equals("redis") ? Workloads.NAIVE_SET : Workloads.NAIVE;
      rows.add(List.of(m.database(), m.workload(), m.clients(), m.seconds(), m.ops(), m.errors(), m.opsPerSecond(),
          m.p50Millis(), m.p99Millis(), m.p999Millis(), m.meanMillis(), m.maxMillis(),
          ratio(m.database(), m.workload(), base, m.clients()), m.firstError() == null ? "" : m.firstError()));
    }
    Csv.write(dir.resolve("throughput.csv"), List.of("database", "workload", "clients", "seconds", "ops", "errors",
        "ops_per_s", "p50_ms", "p99_ms", "p999_ms", "mean_ms", "max_ms", "ratio_to_naive", "first_error"), rows);

    rows = new ArrayList<>();
    for (Results.Race x : r.races) {
      rows.add(List.of(x.database(), x.workload(), x.clients(), x.rounds(), x.attempts(), x.effects(), x.keysWithEffect(),
          x.duplicates(), x.missing(), x.errors(), x.firstError() == null ? "" : x.firstError()));
    }
    Csv.write(dir.resolve("races.csv"), List.of("database", "workload", "clients", "keys", "attempts", "effects",
        "keys_with_effect", "duplicates", "missing", "errors", "first_error"), rows);

    rows = new ArrayList<>();
    for (Results.Shape s : r.shapes) {
      Results.Measurement m = s.run();
      rows.add(List.of(s.database(), s.shape(), m.clients(), s.preloaded(), s.preloadSeconds(), s.tableBytes(), m.ops(),
          m.errors(), m.opsPerSecond(), m.p50Millis(), m.p99Millis(), m.p999Millis()));
    }
    Csv.write(dir.resolve("key-shape.csv"), List.of("database", "keys", "clients", "records_before", "load_s",
        "table_bytes", "ops", "errors", "ops_per_s", "p50_ms", "p99_ms", "p999_ms"), rows);

    rows = new ArrayList<>();
    for (Results.Jmh j : r.jmh) {
      rows.add(List.of(j.benchmark(), j.params(), j.mode(), j.samples(), j.score(), j.error(), j.unit(), j.p50(), j.p99()));
    }
    Csv.write(dir.resolve("jmh.csv"), List.of("benchmark", "params", "mode", "samples", "score", "error", "unit", "p50", "p99"), rows);

    rows = new ArrayList<>();
    for (Target t : targets()) {
      rows.add(List.of(t.target(), t.where(), t.measured(), t.verdict()));
    }
    Csv.write(dir.resolve("targets.csv"), List.of("target", "where", "measured", "verdict"), rows);

    rows = new ArrayList<>();
    rows.add(List.of("harness", "mode", o.mode.name().toLowerCase(Locale.ROOT)));
    rows.add(List.of("harness", "arguments", String.join(" ", o.argv)));
    rows.add(List.of("harness", "started", started.toString()));
    rows.add(List.of("harness", "elapsed_s", elapsed.toSeconds()));
    for (Map.Entry<String, String> e : machine.entrySet()) {
      rows.add(List.of("machine", e.getKey(), e.getValue()));
    }
    rows.add(List.of("machine", "load_average_start", loadBefore));
    rows.add(List.of("machine", "load_average_end", loadAfter));
    for (Map.Entry<String, String> e : r.versions.entrySet()) {
      rows.add(List.of(e.getKey(), "version", e.getValue()));
      for (Map.Entry<String, String> s : r.settings.getOrDefault(e.getKey(), Map.of()).entrySet()) {
        rows.add(List.of(e.getKey(), s.getKey(), s.getValue()));
      }
    }
    for (Results.Skipped s : r.skipped) {
      rows.add(List.of(s.database(), "skipped", s.reason()));
    }
    Csv.write(dir.resolve("environment.csv"), List.of("scope", "name", "value"), rows);
  }

  // ---------------------------------------------------------------------------------------------

  private static String cell(String s) {
    return s.replace("|", "\\|").replace("\n", " ");
  }

  private static String join(List<Integer> values) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < values.size(); i++) {
      sb.append(i == 0 ? "" : i == values.size() - 1 ? " and " : ", ").append(values.get(i));
    }
    return sb.toString();
  }

  private static String secs(Duration d) {
    return String.format(Locale.ROOT, "%.1f s", d.toMillis() / 1000.0).replace(".0 s", " s");
  }

  private static String minutes(Duration d) {
    long s = d.toSeconds();
    return s >= 60 ? (s / 60) + " min " + (s % 60) + " s" : s + " s";
  }

  static String fmtOps(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%,.0f", v);
  }

  static String fmtRatio(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.2fx", v);
  }

  static String ms(double v) {
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.3f", v);
  }

  private static String num(double v) {
    if (Double.isNaN(v)) {
      return "n/a";
    }
    return Math.abs(v) >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.3f", v);
  }
}
