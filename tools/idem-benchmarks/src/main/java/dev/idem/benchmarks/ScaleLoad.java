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
import java.nio.file.DirectoryStream;
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
 * synchronous_commit = off}), MariaDB (server defaults, a database per table), SQLite (the notes
 * service's embedded store: a file per table in the run's temporary folder, WAL, {@code
 * synchronous=NORMAL}) and, in a report of its own, Redis (lease mode).
 *
 * <p>For each size, four services run at once (transactional and lease mode, on the small and on
 * the large table's database; on SQLite both modes open the table's one file). The rows are loaded
 * the way an operator would load a copy of production ({@link KeyTableLoader}): one real create
 * through the service gives a template record (its principal, operation, fingerprint and stored
 * answer, the service's own bytes), then one {@code INSERT ... SELECT} (over {@code
 * generate_series}, MariaDB's sequence engine, or an SQLite recursive CTE) copies it under keys of
 * the length of a UUID (36 characters, from the MD5 of the row's number, so the load client can
 * name any of them) with creation times spread evenly over the retention (24 hours) and expiries
 * one retention later; the indexes are dropped during the load and rebuilt after it (SQLite's
 * {@code WITHOUT ROWID} table keeps its primary key, filled in key order), then the table is
 * analyzed and, on PostgreSQL and SQLite, checkpointed so the load's own write-back is not
 * measured. A create sends a new UUID key; a replay sends one
 * of the preloaded keys drawn uniformly at random, so at 10^7 rows nearly every replay reads a
 * part of the index and of the heap no earlier replay read.
 *
 * <p>Each round runs the eight workloads (create and replay, two modes, two tables) once, the order
 * rotated from round to round; a cell is the median over rounds, its ratio the median of the
 * per-round ratios of the large table to the small one. Beside throughput and p99: CPU per request
 * of the service and of the database ({@link ProcCpu}: PostgreSQL's backends on the table's
 * database, MariaDB's whole {@code mariadbd}; SQLite runs inside the service), the table's and each
 * index's size per key (PostgreSQL: {@code pg_relation_size}; MariaDB: InnoDB's estimates in {@code
 * information_schema.tables} and {@code mysql.innodb_index_stats}; SQLite: the {@code dbstat}
 * table), and, on PostgreSQL, where a replay's pages came from ({@code pg_statio_user_tables}:
 * shared buffers, or a read from the operating system, which may still be its page cache). The SQL
 * sections of a run go to {@code benchmarks-scale.md}, which the run replaces (so one run names
 * every SQL regime the report should hold), Redis's to {@code benchmarks-scale-redis.md}.
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package
 * java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.ScaleLoad --db postgres,postgres-async,mariadb,sqlite
 * }</pre>
 */
final class ScaleLoad {

  private ScaleLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "ScaleLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.ScaleLoad [options]",
      description = "Creates and replays of the notes service (Idem transactional and lease mode) against a small key table"
          + " and against tables preloaded with --rows rows, in interleaved rounds: throughput, p99, CPU per request, bytes"
          + " per key and buffer hits; writes <out>/benchmarks-scale.md (PostgreSQL, MariaDB, SQLite), and"
          + " <out>/benchmarks-scale-redis.md for --db redis.")
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
        description = "Regimes: postgres (server defaults), postgres-async (synchronous_commit = off on each database), mariadb"
            + " (server defaults, a database per table), sqlite (a file per table, WAL, synchronous=NORMAL), redis (lease mode"
            + " with the Redis store, the notes in SQLite; --redis-rows keys) (default: ${DEFAULT-VALUE}).")
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

    @Option(names = "--mariadb-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:mariadb://127.0.0.1:3306/?user=root",
        description = "MariaDB admin URL; a database per table is created and dropped afterwards (default: ${DEFAULT-VALUE}).")
    String mariadbUrl;

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

  /** One measured run and what it read ({@code blocks}: PostgreSQL only, otherwise {@code null}). */
  record Measured(String table, HttpLoad.Run run, Blocks blocks) {}

  /**
   * A SQL database's regime: which loader, and the CPU sources beside the service's.
   *
   * @param dbCpu the whole server's CPU; {@code null} without /proc, and for SQLite (inside the service)
   * @param ownDb the CPU of the backends on a table's database (PostgreSQL), or {@code null}
   */
  private record Store(KeyTableLoader.Database db, ProcCpu.Source dbCpu, Function<String, ProcCpu.Source> ownDb) {}

  /**
   * A service under load: the workload's name, where it sends, its database for block statistics
   * (PostgreSQL only, else {@code null}), its replay keys, its CPU, its database's backends.
   */
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
        if (!List.of("postgres", "postgres-async", "mariadb", "sqlite", "redis").contains(db)) {
          throw new ParameterException(cl, "--db: postgres, postgres-async, mariadb, sqlite or redis; not " + db);
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
      switch (database) {
        case "mariadb" -> {
          MariadbDatabases databases;
          try {
            databases = MariadbDatabases.open(a.mariadbUrl, "scaleload");
          } catch (SQLException e) {
            System.err.println("ScaleLoad: mariadb skipped, MariaDB not reachable at " + a.mariadbUrl + ": " + e.getMessage());
            continue;
          }
          try (databases) {
            report.append("\n## MariaDB: ").append(databases.version()).append(" (a database per table, default settings)\n\n");
            regime(database, a, dir, databases::create, new Store(KeyTableLoader.Database.MARIADB, cpu ? ProcCpu.mariadb() : null,
                null), report);
          }
        }
        case "sqlite" -> {
          report.append("\n## SQLite: ").append(HttpLoad.query("jdbc:sqlite::memory:", "SELECT sqlite_version()"))
              .append(" (a file per table, WAL, synchronous=NORMAL)\n\n");
          try {
            regime(database, a, dir, name -> "jdbc:sqlite:" + dir.resolve("sqlite-" + name + ".db")
                + "?journal_mode=WAL&synchronous=NORMAL&busy_timeout=10000", new Store(KeyTableLoader.Database.SQLITE, null, null), report);
          } finally { // as the server regimes drop their databases: gigabytes at 10^7 rows (the services' logs stay)
            try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "sqlite-*.db*")) {
              for (Path f : files) {
                Files.deleteIfExists(f);
              }
            }
          }
        }
        default -> PostgresRegime.run("ScaleLoad", database, a.postgresUrl, database.endsWith("-async"), cpu, "table",
            h -> report.append("\n## PostgreSQL: ").append(h.title()).append("\n\n"),
            (urlFor, setting, dbCpu, ownDb) -> {
              regime(database, a, dir, urlFor, new Store(KeyTableLoader.Database.POSTGRES, dbCpu, ownDb), report);
              return List.of();
            });
      }
    }
    if (!report.isEmpty()) {
      write(a, "benchmarks-scale.md", "what a key costs as the key table grows", report, started, List.of(args));
    }
    if (!redisReport.isEmpty()) {
      write(a, "benchmarks-scale-redis.md", "what a key costs as the Redis keyspace grows", redisReport, started, List.of(args));
    }
  }

  /**
   * One SQL database's regime: a database (SQLite: a file) for the small table, and one for each
   * large size; both modes' services share the table's database, as each service creates the
   * shipped schema if it is missing.
   */
  private static void regime(String database, Args a, Path dir, Function<String, String> urlFor, Store store, StringBuilder report)
      throws Exception {
    Function<String, ProcCpu.Source> ownDb = store.ownDb();
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
          preload(store.db(), http, txSmall.base(), smallUrl, a.small);
          smallLoaded = true;
        }
        Duration load = preload(store.db(), http, txBig.base(), bigUrl, rows);
        Sizes loaded = sizes(store.db(), bigUrl);
        String big = String.format(Locale.ROOT, "%,d rows", rows);
        String smallName = String.format(Locale.ROOT, "%,d rows", a.small);
        String smallStats = store.db() == KeyTableLoader.Database.POSTGRES ? smallUrl : null;
        String bigStats = store.db() == KeyTableLoader.Database.POSTGRES ? bigUrl : null;
        List<Target> targets = List.of(
            new Target(smallName, "transactional", txSmall.base(), smallStats, a.small, ProcCpu.process(txSmall.pid()), own(ownDb, "small")),
            new Target(big, "transactional", txBig.base(), bigStats, rows, ProcCpu.process(txBig.pid()), own(ownDb, bigName)),
            new Target(smallName, "lease", leaseSmall.base(), smallStats, a.small, ProcCpu.process(leaseSmall.pid()), own(ownDb, "small")),
            new Target(big, "lease", leaseBig.base(), bigStats, rows, ProcCpu.process(leaseBig.pid()), own(ownDb, bigName)));
        List<Measured> measured = measure(database, a, http, targets, store.dbCpu());
        section(report, a, store.db(), rows, load, smallName, big, loaded, sizes(store.db(), smallUrl), sizes(store.db(), bigUrl),
            measured);
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
        measured.add(new Measured(l.target().table(), run, url == null ? null : blocks(url).minus(before)));
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
          workloads(report, a, smallName, bigName, measured, null);
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
  private static Duration preload(KeyTableLoader.Database db, HttpClient http, URI base, String url, long rows) throws Exception {
    long now = System.currentTimeMillis();
    Duration took = KeyTableLoader.load(db, http, base, url, 1, rows, now + MARGIN_MILLIS,
        now + KeyTableLoader.RETENTION_MILLIS);
    System.out.printf(Locale.ROOT, "  preloaded %,d rows in %d s%n", rows, took.toSeconds());
    return took;
  }

  /**
   * The key table's sizes. InnoDB and SQLite's {@code WITHOUT ROWID} table keep the rows in the
   * primary key's B-tree: there the heap and the primary key are the same pages, counted once in the
   * total.
   */
  private static Sizes sizes(KeyTableLoader.Database db, String url) throws SQLException {
    if (db == KeyTableLoader.Database.MARIADB) {
      MariadbDatabases.TableBytes t = MariadbDatabases.sizes(url);
      return new Sizes(t.rows(), t.data(), t.primaryKey(), t.expiryIndex(), t.data() + t.indexes());
    }
    if (db == KeyTableLoader.Database.SQLITE) {
      long rows = KeyTableLoader.queryLong(url, "SELECT count(*) FROM idem_keys");
      long table = KeyTableLoader.queryLong(url, "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'idem_keys'");
      long expiry = KeyTableLoader.queryLong(url, "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'idem_keys_expires_at'");
      return new Sizes(rows, table, table, expiry, table + expiry);
    }
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

  private static void section(StringBuilder r, Args a, KeyTableLoader.Database db, long rows, Duration load, String smallName, String big,
      Sizes loaded, Sizes small, Sizes large, List<Measured> measured) {
    r.append(String.format(Locale.ROOT, "### %,d rows against %s%n%n", rows, smallName));
    r.append(String.format(Locale.ROOT, "Loaded in %d s. Sizes (%s; bytes per row = size / rows) of the large table right after the"
        + " load, and of both tables after the runs (their creates added rows):%n%n", load.toSeconds(), switch (db) {
          case POSTGRES -> "`pg_relation_size`, the total with TOAST: `pg_total_relation_size`";
          case MARIADB -> "InnoDB's estimates after `ANALYZE TABLE`, whole pages allocated: heap `data_length`, total `data_length +"
              + " index_length` from `information_schema.tables`, each index's `size` in `mysql.innodb_index_stats`; the rows live"
              + " in the primary key's B-tree, so heap and primary key are the same pages, counted once in the total";
          case SQLITE -> "the `dbstat` table's pages of each B-tree; the table is `WITHOUT ROWID`, its rows live in the primary"
              + " key's B-tree, so heap and primary key are the same pages, counted once in the total";
        }));
    r.append("| table | rows | heap | primary key | expiry index | total | bytes per row: heap / pk / expiry / total |\n");
    r.append("|---|---:|---:|---:|---:|---:|---|\n");
    for (Sizes s : List.of(loaded, small, large)) {
      r.append(String.format(Locale.ROOT, "| %s | %,d | %s | %s | %s | %s | %.0f / %.0f / %.0f / %.0f |%n",
          s == loaded ? big + ", loaded" : s == small ? smallName + ", after the runs" : big + ", after the runs",
          s.rows(), mib(s.heapBytes()), mib(s.primaryKeyBytes()), mib(s.expiryIndexBytes()), mib(s.totalBytes()),
          s.perRow(s.heapBytes()), s.perRow(s.primaryKeyBytes()), s.perRow(s.expiryIndexBytes()), s.perRow(s.totalBytes())));
    }
    r.append('\n'); // ends the table: without the blank line Markdown reads the next paragraph as one more row
    workloads(r, a, smallName, big, measured, db);
  }

  /**
   * The workloads' table.
   *
   * @param db the SQL database, whose rows get the block columns (n/a but on PostgreSQL); {@code null} for Redis
   */
  private static void workloads(StringBuilder r, Args a, String smallName, String big, List<Measured> measured,
      KeyTableLoader.Database db) {
    boolean sql = db != null;
    String dbCpu = db == null ? "the Redis server (shared by both services, one of which is idle at a time)" : switch (db) {
      case POSTGRES -> "the backends on its database";
      case MARIADB -> "the `mariadbd` process (the whole server, shared by the four services, three of which are idle at a time)";
      case SQLITE -> "n/a: SQLite runs inside the service, its CPU is in the app column";
    };
    r.append(String.format(Locale.ROOT, "%d clients, median of %d rounds (ratio: the median of the per-round ratios, large / small, in"
        + " brackets their range). CPU per request in µs: the service, and %s.%s%n%n", a.clients, a.rounds, dbCpu,
        db == KeyTableLoader.Database.POSTGRES ? " Shared buffers: the share of the key table's block reads served from PostgreSQL's shared buffers; OS reads: block"
            + " reads per request that went to the operating system (its page cache or the disk)."
            : sql ? " Shared buffers and OS reads come from PostgreSQL's statistics: n/a here." : ""));
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
          cpu(s, ScaleLoad::dbMicros), cpu(l, ScaleLoad::dbMicros)));
      if (sql) {
        r.append(String.format(Locale.ROOT, " %s → %s | %s → %s |", pct(s), pct(l), reads(s), reads(l)));
      }
      r.append('\n');
    }
    r.append('\n');
  }

  /** @return the CPU of the backends on the run's own database where measured (PostgreSQL), else the whole server's */
  private static double dbMicros(Measured m) {
    return m.run().ownDbTicks() >= 0 ? m.run().ownDbMicros() : m.run().dbMicros();
  }

  private static String cpu(List<Measured> runs, java.util.function.ToDoubleFunction<Measured> f) {
    double v = Rounds.Spread.of(runs.stream().map(m -> f.applyAsDouble(m)).toList()).median();
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.0f", v);
  }

  private static String pct(List<Measured> runs) {
    double v = Rounds.Spread.of(runs.stream().map(m -> m.blocks() == null ? Double.NaN : m.blocks().hitRatio()).toList()).median();
    return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.1f%%", 100 * v);
  }

  private static String reads(List<Measured> runs) {
    double v = Rounds.Spread.of(runs.stream().map(m -> m.blocks() == null ? Double.NaN : m.blocks().readsPer(m.run().requests()))
        .toList()).median();
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
