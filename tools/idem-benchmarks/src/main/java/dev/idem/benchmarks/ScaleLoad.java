package dev.idem.benchmarks;

import dev.idem.core.IdempotencyKey;
import dev.idem.core.Scope;
import dev.idem.lab.NotesServiceProcess;
import dev.idem.redis.RedisLeaseStore;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
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
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import picocli.CommandLine;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * What a key costs as the key table grows: the notes service in transactional and in lease mode,
 * each against a small key table ({@code --small} rows) and against one preloaded with {@code
 * --rows} rows, side by side in one run, on PostgreSQL (server defaults, and {@code
 * synchronous_commit = off}).
 *
 * <p>For each size, four services run at once (transactional and lease mode, on the small and on
 * the large table's database). The rows are loaded the way an operator would load a copy of
 * production: one real create through the service gives a template record (its principal,
 * operation, fingerprint and stored answer, the service's own bytes), then {@code INSERT ...
 * SELECT ... FROM generate_series} copies it under keys of the length of a UUID (36 characters,
 * from the MD5 of the row's number, so the load client can name any of them) with creation times
 * spread evenly over the retention (24 hours) and expiries one retention later; the indexes are
 * dropped during the load and rebuilt after it, then {@code VACUUM ANALYZE} and {@code CHECKPOINT}
 * so the load's own write-back is not measured. A create sends a new UUID key; a replay sends one
 * of the preloaded keys drawn uniformly at random, so at 10^7 rows nearly every replay reads a
 * part of the index and of the heap no earlier replay read.
 *
 * <p>Each round runs the eight workloads (create and replay, two modes, two tables) once, the order
 * rotated from round to round; a cell is the median over rounds, its ratio the median of the
 * per-round ratios of the large table to the small one. Beside throughput and p99: CPU per request
 * of the service and of the backends on its database ({@link ProcCpu}), the table's and each
 * index's size per key, and where a replay's pages came from ({@code pg_statio_user_tables}: shared
 * buffers, or a read from the operating system, which may still be its page cache).
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package
 * java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.ScaleLoad --rows 1000000,10000000
 * }</pre>
 */
final class ScaleLoad {

  private ScaleLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "ScaleLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.ScaleLoad [options]",
      description = "Creates and replays of the notes service (Idem transactional and lease mode) against a small key table"
          + " and against tables preloaded with --rows rows, in interleaved rounds: throughput, p99, CPU per request, bytes"
          + " per key and buffer hits; writes <out>/benchmarks-scale.md, and <out>/benchmarks-scale-redis.md for --db redis.")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs/reports", description = "Output folder (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--jar", paramLabel = "PATH", defaultValue = "examples/notes-service/target/notes-service.jar",
        description = "The notes service jar (default: ${DEFAULT-VALUE}).")
    Path jar;

    @Option(names = "--rows", split = ",", paramLabel = "LIST", defaultValue = "1000000,10000000",
        description = "Sizes of the large key table, comma-separated; each needs about 400 bytes a row of disk"
            + " (default: ${DEFAULT-VALUE}).")
    List<Long> rows;

    @Option(names = "--small", paramLabel = "N", defaultValue = "1000",
        description = "Rows preloaded into the small table, the replays' keys there (default: ${DEFAULT-VALUE}).")
    long small;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3", description = "Rounds per size (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seconds", paramLabel = "N", defaultValue = "10", description = "Measured seconds per run (default: ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1",
        description = "Seconds of each run before its measured window (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--clients", paramLabel = "N", defaultValue = "4", description = "Clients, each in a closed loop (default: ${DEFAULT-VALUE}).")
    int clients;

    @Option(names = "--db", split = ",", paramLabel = "LIST", defaultValue = "postgres,postgres-async",
        description = "Regimes: postgres (server defaults), postgres-async (synchronous_commit = off on each database), redis"
            + " (lease mode with the Redis store, the notes in SQLite; --redis-rows keys) (default: ${DEFAULT-VALUE}).")
    List<String> databases;

    @Option(names = "--redis-rows", split = ",", paramLabel = "LIST", defaultValue = "10000000",
        description = "Sizes of the large Redis keyspace, comma-separated; about 700 bytes of Redis memory a key (default: ${DEFAULT-VALUE}).")
    List<Long> redisRows;

    @Option(names = "--redis", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:6379",
        description = "The Redis server; the keys go under prefixes of their own, deleted afterwards (default: ${DEFAULT-VALUE}).")
    String redis;

    @Option(names = "--postgres-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL admin URL; a database per table is created and dropped afterwards (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }

  /** How long before its expiry the oldest preloaded row is: longer than a run of the benchmark. */
  static final long MARGIN_MILLIS = Duration.ofHours(1).toMillis();

  /** A table's size and where its pages were read from. */
  record Sizes(long rows, long heapBytes, long primaryKeyBytes, long expiryIndexBytes, long totalBytes) {
    double perRow(long bytes) {
      return rows == 0 ? Double.NaN : bytes / (double) rows;
    }
  }

  /** Block reads of the key table, cumulative ({@code pg_statio_user_tables}). */
  record Blocks(long heapRead, long heapHit, long indexRead, long indexHit) {
    Blocks minus(Blocks o) {
      return new Blocks(heapRead - o.heapRead, heapHit - o.heapHit, indexRead - o.indexRead, indexHit - o.indexHit);
    }

    /** @return the share of block reads served from shared buffers, NaN without any */
    double hitRatio() {
      long all = heapRead + heapHit + indexRead + indexHit;
      return all == 0 ? Double.NaN : (heapHit + indexHit) / (double) all;
    }

    /** @return the block reads that went to the operating system per request */
    double readsPer(long requests) {
      return requests <= 0 ? Double.NaN : (heapRead + indexRead) / (double) requests;
    }
  }

  /** One measured run and what it read. */
  record Measured(String table, HttpLoad.Run run, Blocks blocks) {}

  /** A service under load: the workload's name, where it sends, its CPU, its database's backends, its replay keys. */
  private record Target(String table, String mode, URI base, String url, long replayKeys, ProcCpu.Source cpu,
      ProcCpu.Source ownDb) {}

  /**
   * @param args see {@code --help}
   * @throws Exception when the services cannot be started or the report cannot be written
   */
  public static void main(String[] args) throws Exception {
    Args a = new Args();
    boolean run = BenchmarkCommand.parse("ScaleLoad", a, args, cl -> {
      if (a.rounds < 1 || a.seconds < 1 || a.warmup < 0 || a.clients < 1 || a.small < 1 || a.rows.isEmpty()
          || a.rows.stream().anyMatch(n -> n <= a.small)) {
        throw new ParameterException(cl, "--rounds, --seconds, --clients and --small must be 1 or more, --warmup 0 or more,"
            + " and every --rows size larger than --small");
      }
      for (String db : a.databases) {
        if (!db.equals("postgres") && !db.equals("postgres-async") && !db.equals("redis")) {
          throw new ParameterException(cl, "--db: postgres, postgres-async or redis; not " + db);
        }
      }
    }, () -> a.jar);
    if (!run) {
      return;
    }
    boolean cpu = ProcCpu.available();
    Instant started = Instant.now();
    Path dir = Files.createTempDirectory("idem-scale-bench-");
    StringBuilder report = new StringBuilder();
    StringBuilder redisReport = new StringBuilder();
    for (String database : a.databases) {
      if (database.equals("redis")) {
        redis(a, dir, cpu, redisReport);
        continue;
      }
      boolean async = database.endsWith("-async");
      PostgresRegime.run("ScaleLoad", database, a.postgresUrl, async, cpu, "table",
          h -> report.append("\n## PostgreSQL: ").append(h.title()).append("\n\n"),
          (urlFor, setting, dbCpu, ownDb) -> {
            regime(database, a, dir, urlFor, dbCpu, ownDb, report);
            return List.of();
          });
    }
    if (!report.isEmpty()) {
      write(a, "benchmarks-scale.md", "what a key costs as the key table grows", report, started, List.of(args));
    }
    if (!redisReport.isEmpty()) {
      write(a, "benchmarks-scale-redis.md", "what a key costs as the Redis keyspace grows", redisReport, started, List.of(args));
    }
  }

  private static void regime(String database, Args a, Path dir, Function<String, String> urlFor, ProcCpu.Source dbCpu,
      Function<String, ProcCpu.Source> ownDb, StringBuilder report) throws Exception {
    String smallUrl = urlFor.apply("small");
    boolean smallLoaded = false;
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    for (long rows : a.rows) {
      String bigName = "rows-" + rows;
      String bigUrl = urlFor.apply(bigName);
      System.out.println("== " + database + ", " + rows + " rows");
      try (NotesServiceProcess txSmall = start(a, dir, database + "-tx-small", smallUrl, "transactional");
          NotesServiceProcess leaseSmall = start(a, dir, database + "-lease-small", smallUrl, "lease");
          NotesServiceProcess txBig = start(a, dir, database + "-tx-" + bigName, bigUrl, "transactional");
          NotesServiceProcess leaseBig = start(a, dir, database + "-lease-" + bigName, bigUrl, "lease")) {
        if (!smallLoaded) {
          preload(http, txSmall.base(), smallUrl, a.small);
          smallLoaded = true;
        }
        Duration load = preload(http, txBig.base(), bigUrl, rows);
        Sizes loaded = sizes(bigUrl);
        String big = String.format(Locale.ROOT, "%,d rows", rows);
        String smallName = String.format(Locale.ROOT, "%,d rows", a.small);
        List<Target> targets = List.of(
            new Target(smallName, "transactional", txSmall.base(), smallUrl, a.small, ProcCpu.process(txSmall.pid()), own(ownDb, "small")),
            new Target(big, "transactional", txBig.base(), bigUrl, rows, ProcCpu.process(txBig.pid()), own(ownDb, bigName)),
            new Target(smallName, "lease", leaseSmall.base(), smallUrl, a.small, ProcCpu.process(leaseSmall.pid()), own(ownDb, "small")),
            new Target(big, "lease", leaseBig.base(), bigUrl, rows, ProcCpu.process(leaseBig.pid()), own(ownDb, bigName)));
        List<Measured> measured = measure(database, a, http, targets, dbCpu);
        section(report, a, rows, load, smallName, big, loaded, sizes(smallUrl), sizes(bigUrl), measured);
      }
    }
  }

  /**
   * Checks that every service replays a preloaded record, warms every workload up, then runs the
   * rounds: create and replay on each target, the order rotated from round to round.
   */
  private static List<Measured> measure(String database, Args a, HttpClient http, List<Target> targets, ProcCpu.Source dbCpu)
      throws Exception {
    for (Target t : targets) { // every service replays a preloaded record of its table before anything is measured
      KeyTableLoader.replay(http, t.base(), 1 + ThreadLocalRandom.current().nextLong(t.replayKeys()), true);
    }
    record Load(String workload, Target target, HttpLoad.Request request) {}
    List<Load> loads = new ArrayList<>();
    for (Target t : targets) {
      loads.add(new Load("create, " + t.mode(), t,
          n -> HttpLoad.send(http, t.base(), "/notes", UUID.randomUUID().toString(), "new-" + n)));
      loads.add(new Load("replay, " + t.mode(), t,
          n -> KeyTableLoader.replay(http, t.base(), 1 + ThreadLocalRandom.current().nextLong(t.replayKeys()), false)));
    }
    System.out.println("warming up (not measured):");
    for (Load l : loads) {
      HttpLoad.run(database, l.workload() + " on " + l.target().table(), a.clients, 0, 0, 0, 5, l.request(), () -> -1, null, null);
    }
    List<Measured> measured = new ArrayList<>();
    for (int round = 1; round <= a.rounds; round++) {
      List<Load> order = Rounds.order(loads, round - 1);
      for (int i = 0; i < order.size(); i++) {
        Load l = order.get(i);
        String url = l.target().url();
        Blocks before = url == null ? null : blocks(url);
        HttpLoad.Run run = HttpLoad.run(database, l.workload(), a.clients, round, i + 1, a.warmup, a.seconds, l.request(),
            l.target().cpu(), dbCpu, l.target().ownDb());
        if (url != null) {
          Thread.sleep(1_100); // PostgreSQL's backends flush their statistics at most once a second
        }
        measured.add(new Measured(l.target().table(), run, url == null ? new Blocks(0, 0, 0, 0) : blocks(url).minus(before)));
      }
    }
    return measured;
  }

  /**
   * Lease mode with the Redis store: a service on a small keyspace and one on a large one, each
   * under a key prefix of its own on the same server (notes in a SQLite file per service). The
   * records are written the way the store writes them: the template's hash (the service's own
   * record of a create), copied field by field under {@link RedisLeaseStore#recordKey} of each
   * preloaded key, with its expiry ({@code PEXPIREAT}) spread over the retention like the SQL rows.
   */
  private static void redis(Args a, Path dir, boolean cpu, StringBuilder report) throws Exception {
    HostAndPort hp = HostAndPort.from(a.redis);
    String run = UUID.randomUUID().toString().substring(0, 8);
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    try (Jedis admin = new Jedis(hp); UnifiedJedis unified = new RedisClient.Builder().hostAndPort(hp).build()) {
      report.append("\n## Redis ").append(info(admin, "server", "redis_version")).append(" (lease mode; the notes in a SQLite file per service)\n\n");
      for (long rows : a.redisRows) {
        String smallPrefix = "idem-scale-" + run + "-small-" + rows + ":";
        String bigPrefix = "idem-scale-" + run + "-big-" + rows + ":";
        System.out.println("== redis, " + rows + " keys");
        try (NotesServiceProcess small = startRedis(a, dir, "redis-small-" + rows, smallPrefix);
            NotesServiceProcess big = startRedis(a, dir, "redis-big-" + rows, bigPrefix)) {
          loadRedis(http, small.base(), admin, unified, smallPrefix, a.small);
          long before = Long.parseLong(info(admin, "memory", "used_memory"));
          Duration load = loadRedis(http, big.base(), admin, unified, bigPrefix, rows);
          long after = Long.parseLong(info(admin, "memory", "used_memory"));
          String bigName = String.format(Locale.ROOT, "%,d keys", rows);
          String smallName = String.format(Locale.ROOT, "%,d keys", a.small);
          List<Target> targets = List.of(
              new Target(smallName, "lease", small.base(), null, a.small, cpu ? ProcCpu.process(small.pid()) : () -> -1, null),
              new Target(bigName, "lease", big.base(), null, rows, cpu ? ProcCpu.process(big.pid()) : () -> -1, null));
          List<Measured> measured = measure("redis", a, http, targets, cpu ? ProcCpu.redis() : null);
          report.append(String.format(Locale.ROOT, "### %,d keys against %s%n%n", rows, smallName));
          report.append(String.format(Locale.ROOT, "Loaded in %d s (pipelined `HSET` + `PEXPIREAT`). `used_memory` grew by %.1f MiB: %.0f"
              + " bytes a key (the hash of a record with its stored answer, and the keyspace's share). Redis keeps every key in"
              + " memory: a replay is a memory read at any size; the size is bounded by the server's memory (`maxmemory`, with"
              + " `noeviction`, the only policy that never drops a live key).%n%n", load.toSeconds(), (after - before) / 1048576.0,
              (after - before) / (double) rows));
          workloads(report, a, smallName, bigName, measured, false);
        } finally {
          unlink(admin, smallPrefix);
          unlink(admin, bigPrefix);
        }
      }
    }
  }

  private static NotesServiceProcess startRedis(Args a, Path dir, String name, String prefix) throws Exception {
    return NotesServiceProcess.start(a.jar, dir, name, true, "jdbc:sqlite:" + dir.resolve(name + ".db")
        + "?journal_mode=WAL&synchronous=NORMAL&busy_timeout=10000", List.of("--idem.mode=lease", "--idem.in-progress=fail-fast",
        "--idem.purge.enabled=false",
        "--idem.store=redis", "--notes.redis.url=redis://" + a.redis, "--idem.redis.key-prefix=" + prefix));
  }

  private static String info(Jedis jedis, String section, String field) {
    for (String line : jedis.info(section).split("\r?\n")) {
      if (line.startsWith(field + ":")) {
        return line.substring(field.length() + 1).trim();
      }
    }
    throw new IllegalStateException("INFO " + section + " has no " + field);
  }

  /** Copies the service's record of a new create {@code rows} times under the preloaded keys. */
  private static Duration loadRedis(HttpClient http, URI base, Jedis admin, UnifiedJedis unified, String prefix, long rows)
      throws Exception {
    long start = System.nanoTime();
    HttpLoad.send(http, base, "/notes", "scale-template-" + UUID.randomUUID(), KeyTableLoader.TEMPLATE_TITLE);
    List<String> found = admin.keys(prefix + "*").stream().toList();
    if (found.size() != 1) {
      throw new IllegalStateException("expected the template's record alone under " + prefix + ", found " + found.size() + " keys");
    }
    Map<byte[], byte[]> template = admin.hgetAll(found.get(0).getBytes(StandardCharsets.UTF_8));
    Map<String, byte[]> fields = new LinkedHashMap<>();
    template.forEach((k, v) -> fields.put(new String(k, StandardCharsets.UTF_8), v));
    Scope scope = Scope.of(new String(fields.get("principal"), StandardCharsets.UTF_8),
        new String(fields.get("operation"), StandardCharsets.UTF_8));
    RedisLeaseStore store = RedisLeaseStore.builder(unified).keyPrefix(prefix).build();
    long now = System.currentTimeMillis();
    long newest = now + KeyTableLoader.RETENTION_MILLIS;
    long span = KeyTableLoader.RETENTION_MILLIS - MARGIN_MILLIS;
    Pipeline p = admin.pipelined();
    for (long n = 1; n <= rows; n++) {
      long expires = newest - (n - 1) * span / Math.max(1, rows - 1);
      String key = KeyTableLoader.keyOf(n);
      byte[] name = store.recordKey(scope, IdempotencyKey.of(key)).getBytes(StandardCharsets.UTF_8);
      Map<byte[], byte[]> hash = new LinkedHashMap<>();
      fields.forEach((k, v) -> hash.put(k.getBytes(StandardCharsets.UTF_8), switch (k) {
        case "key" -> key.getBytes(StandardCharsets.UTF_8);
        case "expires_at" -> Long.toString(expires).getBytes(StandardCharsets.US_ASCII);
        case "completed_at" -> Long.toString(expires - KeyTableLoader.RETENTION_MILLIS).getBytes(StandardCharsets.US_ASCII);
        default -> v;
      }));
      p.hset(name, hash);
      p.pexpireAt(name, expires);
      if (n % 10_000 == 0) {
        p.sync();
      }
    }
    p.sync();
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    System.out.printf(Locale.ROOT, "  loaded %,d Redis records in %d s%n", rows, took.toSeconds());
    return took;
  }

  private static void unlink(Jedis admin, String prefix) {
    ScanParams match = new ScanParams().match(prefix + "*").count(10_000);
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      ScanResult<String> page = admin.scan(cursor, match);
      if (!page.getResult().isEmpty()) {
        admin.unlink(page.getResult().toArray(new String[0]));
      }
      cursor = page.getCursor();
    } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
  }

  private static ProcCpu.Source own(Function<String, ProcCpu.Source> ownDb, String name) {
    return ownDb == null ? null : ownDb.apply(name);
  }

  private static NotesServiceProcess start(Args a, Path dir, String name, String url, String mode) throws Exception {
    List<String> arguments = new ArrayList<>(List.of("--idem.mode=" + mode, "--idem.purge.enabled=false")); // nothing expires here
    if (mode.equals("lease")) {
      arguments.add("--idem.in-progress=fail-fast");
    }
    return NotesServiceProcess.start(a.jar, dir, name, true, url, arguments);
  }

  /**
   * Loads {@code rows} live records: created evenly over the last retention but its last hour,
   * each expiring one retention after it, as a table that has run for a retention at a steady rate,
   * where nothing expires while the runs last (a replay of an expired key would run as a create).
   */
  private static Duration preload(HttpClient http, URI base, String url, long rows) throws Exception {
    long now = System.currentTimeMillis();
    Duration took = KeyTableLoader.load(KeyTableLoader.Database.POSTGRES, http, base, url, 1, rows, now + MARGIN_MILLIS,
        now + KeyTableLoader.RETENTION_MILLIS);
    System.out.printf(Locale.ROOT, "  preloaded %,d rows in %d s%n", rows, took.toSeconds());
    return took;
  }

  private static Sizes sizes(String url) throws SQLException {
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT (SELECT count(*) FROM idem_keys), pg_relation_size('idem_keys'),"
            + " pg_relation_size('idem_keys_pkey'), pg_relation_size('idem_keys_expires_at'), pg_total_relation_size('idem_keys')")) {
      rs.next();
      return new Sizes(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5));
    }
  }

  private static Blocks blocks(String url) throws SQLException {
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT heap_blks_read, heap_blks_hit, idx_blks_read, idx_blks_hit FROM pg_statio_user_tables"
            + " WHERE relname = 'idem_keys'")) {
      rs.next();
      return new Blocks(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
    }
  }

  private static void section(StringBuilder r, Args a, long rows, Duration load, String smallName, String big, Sizes loaded,
      Sizes small, Sizes large, List<Measured> measured) {
    r.append(String.format(Locale.ROOT, "### %,d rows against %s%n%n", rows, smallName));
    r.append(String.format(Locale.ROOT, "Loaded in %d s. Sizes (`pg_relation_size`; bytes per row = size / rows) of the large table"
        + " right after the load, and of both tables after the runs (their creates added rows):%n%n", load.toSeconds()));
    r.append("| table | rows | heap | primary key | expiry index | total (with TOAST) | bytes per row: heap / pk / expiry / total |\n");
    r.append("|---|---:|---:|---:|---:|---:|---|\n");
    for (Sizes s : List.of(loaded, small, large)) {
      r.append(String.format(Locale.ROOT, "| %s | %,d | %s | %s | %s | %s | %.0f / %.0f / %.0f / %.0f |%n",
          s == loaded ? big + ", loaded" : s == small ? smallName + ", after the runs" : big + ", after the runs",
          s.rows(), mib(s.heapBytes()), mib(s.primaryKeyBytes()), mib(s.expiryIndexBytes()), mib(s.totalBytes()),
          s.perRow(s.heapBytes()), s.perRow(s.primaryKeyBytes()), s.perRow(s.expiryIndexBytes()), s.perRow(s.totalBytes())));
    }
    workloads(r, a, smallName, big, measured, true);
  }

  private static void workloads(StringBuilder r, Args a, String smallName, String big, List<Measured> measured, boolean sql) {
    r.append(String.format(Locale.ROOT, "%d clients, median of %d rounds (ratio: the median of the per-round ratios, large / small, in"
        + " brackets their range). CPU per request in µs: the service, and %s.%s%n%n", a.clients, a.rounds,
        sql ? "the backends on its database" : "the Redis server (shared by both services, one of which is idle at a time)",
        sql ? " Shared buffers: the share of the key table's block reads served from PostgreSQL's shared buffers; OS reads: block"
            + " reads per request that went to the operating system (its page cache or the disk)." : ""));
    r.append("| workload | ops/s small → large | ratio | p99 ms small → large | p99 ratio | app µs | db µs |"
        + (sql ? " shared buffers | OS reads/req |" : "") + "\n");
    r.append("|---|---|---|---|---|---|---|" + (sql ? "---|---|" : "") + "\n");
    Map<String, List<Measured>> byWorkload = new LinkedHashMap<>();
    for (Measured m : measured) {
      byWorkload.computeIfAbsent(m.run().workload(), k -> new ArrayList<>()).add(m);
    }
    for (Map.Entry<String, List<Measured>> e : byWorkload.entrySet()) {
      List<Measured> s = e.getValue().stream().filter(m -> m.table().equals(smallName)).toList();
      List<Measured> l = e.getValue().stream().filter(m -> m.table().equals(big)).toList();
      Rounds.Summary sum = Rounds.summarize(l.stream().map(m -> m.run().sample()).toList(), s.stream().map(m -> m.run().sample()).toList());
      Rounds.Summary base = Rounds.summarize(s.stream().map(m -> m.run().sample()).toList(), List.of());
      List<Double> p99 = new ArrayList<>();
      for (Measured lm : l) {
        for (Measured sm : s) {
          if (sm.run().round() == lm.run().round()) {
            p99.add(lm.run().latency().percentileMillis(99) / sm.run().latency().percentileMillis(99));
          }
        }
      }
      Rounds.Spread p99Ratio = Rounds.Spread.of(p99);
      r.append(String.format(Locale.ROOT, "| %s | %.0f → %.0f | %.2fx [%.2f-%.2f] | %.2f → %.2f | %.2fx [%.2f-%.2f] | %s → %s | %s → %s |",
          e.getKey(), base.ops().median(), sum.ops().median(), sum.ratio().median(), sum.ratio().min(), sum.ratio().max(),
          base.p99Millis(), sum.p99Millis(), p99Ratio.median(), p99Ratio.min(), p99Ratio.max(),
          cpu(s, r1 -> r1.run().appMicros()), cpu(l, r1 -> r1.run().appMicros()),
          cpu(s, r1 -> sql ? r1.run().ownDbMicros() : r1.run().dbMicros()), cpu(l, r1 -> sql ? r1.run().ownDbMicros() : r1.run().dbMicros())));
      if (sql) {
        r.append(String.format(Locale.ROOT, " %s → %s | %s → %s |", pct(s), pct(l), reads(s), reads(l)));
      }
      r.append('\n');
    }
    r.append('\n');
  }

  private static String cpu(List<Measured> runs, java.util.function.ToDoubleFunction<Measured> f) {
    double v = Rounds.Spread.of(runs.stream().map(m -> f.applyAsDouble(m)).toList()).median();
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f", v);
  }

  private static String pct(List<Measured> runs) {
    double v = Rounds.Spread.of(runs.stream().map(m -> m.blocks().hitRatio()).toList()).median();
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.1f%%", 100 * v);
  }

  private static String reads(List<Measured> runs) {
    double v = Rounds.Spread.of(runs.stream().map(m -> m.blocks().readsPer(m.run().requests())).toList()).median();
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.2f", v);
  }

  private static String mib(long bytes) {
    return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
  }

  private static void write(Args a, String file, String title, StringBuilder body, Instant started, List<String> args)
      throws IOException {
    StringBuilder r = new StringBuilder();
    r.append("# Benchmarks: ").append(title).append("\n\n");
    r.append(BenchmarkCommand.writtenBy("ScaleLoad", args, started));
    r.append("Each section compares, in one run, the notes service on a small key store and on a preloaded one (SQL: in"
        + " transactional and in lease mode; Redis: lease mode). A create sends a new key; a replay sends one of the preloaded"
        + " keys drawn at random, so on the large store it reads pages no earlier replay read. The preloaded records copy a"
        + " real record the service wrote (its stored answer, its fingerprint) under 36-character keys, created over the last"
        + " 24 hours.\n");
    r.append(body);
    Files.createDirectories(a.out);
    Files.writeString(a.out.resolve(file), r.toString());
    System.out.println("wrote " + a.out.resolve(file));
  }
}
