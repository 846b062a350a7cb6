package dev.idem.benchmarks;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.NotesServiceProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
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
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import org.jspecify.annotations.Nullable;

/**
 * A purge beside live traffic: the notes service (Idem, transactional mode) on a key table that
 * holds {@code --live} live records and a day's worth of expired ones ({@code --expired}), serving
 * creates and replays while Idem's purge ({@link JdbcIdempotency#purgeExpired}, what {@code idem
 * purge} and the starter's scheduled purge run: batches of {@code --batch} rows, each its own short
 * transaction) deletes the expired records. Reported per database and day: the purge's rows per
 * second, the live requests' throughput, p50, p99 and maximum with the purge against a window of
 * the same traffic without it just before, and the table's and indexes' sizes after the load, after
 * the purge and after the next day's load (whether the space the purge freed is used again). A
 * live request that failed, and a replay not answered as one, counts as an error.
 *
 * <p>Each day loads its expired records with {@link KeyTableLoader} (the first day with the indexes
 * dropped and rebuilt, later days with the indexes in place, as traffic would have written them),
 * expiring over the last retention, then measures {@code --baseline} seconds of traffic without a
 * purge, then the purge with the same traffic beside it.
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package
 * java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.PurgeLoad --expired 10000000
 * }</pre>
 */
final class PurgeLoad {

  private PurgeLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "PurgeLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.PurgeLoad [options]",
      description = "Idem's purge of a day's expired keys beside live creates and replays of the notes service: purge rows per"
          + " second, the live requests' latency with and without the purge, sizes; writes <out>/benchmarks-purge.md.")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "docs/reports", description = "Output folder (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--jar", paramLabel = "PATH", defaultValue = "examples/notes-service/target/notes-service.jar",
        description = "The notes service jar (default: ${DEFAULT-VALUE}).")
    Path jar;

    @Option(names = "--db", split = ",", paramLabel = "LIST", defaultValue = "postgres,mariadb",
        description = "postgres and/or mariadb, server defaults (default: ${DEFAULT-VALUE}).")
    List<String> databases;

    @Option(names = "--live", paramLabel = "N", defaultValue = "1000000", description = "Live records (default: ${DEFAULT-VALUE}).")
    long live;

    @Option(names = "--expired", paramLabel = "N", defaultValue = "10000000",
        description = "Expired records each day adds (default: ${DEFAULT-VALUE}).")
    long expired;

    @Option(names = "--days", paramLabel = "N", defaultValue = "2", description = "Days: a load and a purge each (default: ${DEFAULT-VALUE}).")
    int days;

    @Option(names = "--batch", paramLabel = "N", defaultValue = "1000", description = "Rows per purge batch (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--clients", paramLabel = "N", defaultValue = "2",
        description = "Clients sending creates, and as many sending replays, each in a closed loop (default: ${DEFAULT-VALUE}).")
    int clients;

    @Option(names = "--baseline", paramLabel = "SECONDS", defaultValue = "30",
        description = "Seconds of traffic measured without the purge before it (default: ${DEFAULT-VALUE}).")
    int baseline;

    @Option(names = "--autovacuum-wait", paramLabel = "SECONDS", defaultValue = "240",
        description = "PostgreSQL: how long to wait after a purge for autovacuum to finish on the key table before the next day"
            + " (default: ${DEFAULT-VALUE}).")
    int autovacuumWait;

    @Option(names = "--postgres-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL admin URL (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = "--mariadb-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:mariadb://127.0.0.1:3306/?user=root",
        description = "MariaDB admin URL (default: ${DEFAULT-VALUE}).")
    String mariadbUrl;

    @Option(names = "--mariadb-buffer-pool", paramLabel = "MIB",
        description = "MariaDB's innodb_buffer_pool_size for the run, MiB: set with SET GLOBAL before and set back after"
            + " (default: the server's own).")
    @Nullable Long mariadbBufferPoolMib;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }

  /** What a window of live traffic did: creates and replays, each with its latencies. */
  record Window(double seconds, LatencyStats creates, LatencyStats replays, long errors) {
    String line(String name) {
      return String.format(Locale.ROOT, "| %s | %.0f s | %.0f / %.0f | %.2f / %.2f | %.2f / %.2f | %.1f / %.1f | %d |", name, seconds,
          creates.count() / seconds, replays.count() / seconds, creates.percentileMillis(50), replays.percentileMillis(50),
          creates.percentileMillis(99), replays.percentileMillis(99), creates.maxMillis(), replays.maxMillis(), errors);
    }
  }

  /** Sizes of the key table, bytes, and its rows. */
  record Sizes(long rows, long heap, long indexes, long total) {
    String line(String when) {
      return String.format(Locale.ROOT, "| %s | %,d | %.1f MiB | %.1f MiB | %.1f MiB |", when, rows, heap / 1048576.0, indexes / 1048576.0,
          total / 1048576.0);
    }
  }

  /**
   * @param args see {@code --help}
   * @throws Exception when the service cannot be started or the report cannot be written
   */
  public static void main(String[] args) throws Exception {
    Args a = new Args();
    boolean run = BenchmarkCommand.parse("PurgeLoad", a, args, cl -> {
      if (a.mariadbBufferPoolMib != null && (a.mariadbBufferPoolMib < 128 || a.mariadbBufferPoolMib > 1_048_576)) {
        throw new ParameterException(cl, "--mariadb-buffer-pool: 128 to 1048576 MiB");
      }
      if (a.live < 1 || a.expired < 1 || a.days < 1 || a.batch < 1 || a.batch > 100_000 || a.clients < 1 || a.baseline < 1) {
        throw new ParameterException(cl, "--live, --expired, --days, --clients and --baseline must be 1 or more, --batch 1 to 100000");
      }
      for (String db : a.databases) {
        if (!db.equals("postgres") && !db.equals("mariadb")) {
          throw new ParameterException(cl, "--db: postgres and/or mariadb; not " + db);
        }
      }
    }, () -> a.jar);
    if (!run) {
      return;
    }
    Instant started = Instant.now();
    Path dir = Files.createTempDirectory("idem-purge-bench-");
    StringBuilder report = new StringBuilder();
    for (String database : a.databases) {
      if (database.equals("mariadb")) {
        MariadbDatabases databases;
        try {
          databases = MariadbDatabases.open(a.mariadbUrl, "purge");
        } catch (SQLException e) {
          System.err.println("PurgeLoad: " + database + " skipped, not reachable at " + a.mariadbUrl + ": " + e.getMessage());
          continue;
        }
        long pool = KeyTableLoader.queryLong(a.mariadbUrl, "SELECT @@innodb_buffer_pool_size");
        try (databases) {
          if (a.mariadbBufferPoolMib != null) {
            MariadbDatabases.setBufferPool(a.mariadbUrl, a.mariadbBufferPoolMib * 1048576);
          }
          long used = KeyTableLoader.queryLong(a.mariadbUrl, "SELECT @@innodb_buffer_pool_size");
          report.append("\n## MariaDB ").append(databases.version()).append(a.mariadbBufferPoolMib == null
              ? String.format(Locale.ROOT, ", server defaults (innodb_buffer_pool_size %d MiB)", used / 1048576)
              : String.format(Locale.ROOT, ", server defaults but innodb_buffer_pool_size %d MiB (SET GLOBAL for the run; the"
                  + " server's was %d MiB)", used / 1048576, pool / 1048576)).append("\n\n");
          measure(KeyTableLoader.Database.MARIADB, a, dir, databases.create("keys"), report);
        } finally {
          if (a.mariadbBufferPoolMib != null) {
            MariadbDatabases.setBufferPool(a.mariadbUrl, pool);
          }
        }
        continue;
      }
      String admin = a.postgresUrl;
      String name = "idem_purge_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);
      try (Connection c = DriverManager.getConnection(admin); Statement st = c.createStatement()) {
        st.execute("CREATE DATABASE " + name);
        try {
          String version = HttpLoad.query(admin, "SELECT version()").replaceAll(" on .*", "");
          report.append("\n## PostgreSQL ").append(version).append(", server defaults\n\n");
          measure(KeyTableLoader.Database.POSTGRES, a, dir, HttpLoad.withDatabase(admin, name), report);
        } finally {
          st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        }
      } catch (SQLException e) {
        System.err.println("PurgeLoad: " + database + " skipped, not reachable at " + admin + ": " + e.getMessage());
      }
    }
    StringBuilder r = new StringBuilder("# Benchmarks: a purge beside live traffic\n\n");
    r.append(BenchmarkCommand.writtenBy("PurgeLoad", List.of(args), started));
    r.append(String.format(Locale.ROOT, "The notes service in transactional mode, %,d live keys, %,d expired keys a day, purged in batches"
        + " of %d by `JdbcIdempotency.purgeExpired` (what `idem purge` and `idem.purge.enabled` run) while %d clients send creates"
        + " and %d replays of live keys. Each row of the traffic tables is one window: creates / replays.%n", a.live, a.expired, a.batch,
        a.clients, a.clients));
    r.append(report);
    Files.createDirectories(a.out);
    Files.writeString(a.out.resolve("benchmarks-purge.md"), r.toString());
    System.out.println("wrote " + a.out.resolve("benchmarks-purge.md"));
  }

  private static void measure(KeyTableLoader.Database db, Args a, Path dir, String url, StringBuilder report) throws Exception {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    String name = db.name().toLowerCase(Locale.ROOT);
    // the service's own scheduled purge is off: it would start 5 minutes after start-up and purge
    // beside the one measured here, each counting only its own deletions
    try (NotesServiceProcess service = NotesServiceProcess.start(a.jar, dir, "purge-" + name, true, url,
        List.of("--idem.mode=transactional", "--idem.purge.enabled=false"))) {
      long now = System.currentTimeMillis();
      // live keys expire from 12 hours on, so none expires during a run: with the first at one hour,
      // a MariaDB day of 10^7 (73 minutes) counted replays of keys that had since expired as errors
      Duration liveLoad = KeyTableLoader.load(db, http, service.base(), url, 1, a.live, now + Duration.ofHours(12).toMillis(),
          now + KeyTableLoader.RETENTION_MILLIS);
      System.out.printf(Locale.ROOT, "== %s: %,d live keys loaded in %d s%n", name, a.live, liveLoad.toSeconds());
      List<String> sizes = new ArrayList<>();
      StringBuilder traffic = new StringBuilder();
      StringBuilder purges = new StringBuilder();
      for (int day = 1; day <= a.days; day++) {
        long from = a.live + 1 + (long) (day - 1) * a.expired;
        long t = System.currentTimeMillis();
        Duration load = KeyTableLoader.load(db, http, service.base(), url, from, a.expired, t - KeyTableLoader.RETENTION_MILLIS,
            t - Duration.ofMinutes(1).toMillis(), day > 1);
        System.out.printf(Locale.ROOT, "  day %d: %,d expired keys loaded in %d s%n", day, a.expired, load.toSeconds());
        sizes.add(sizes(db, url).line("day " + day + ", after its load (" + load.toSeconds() + " s)"));
        Window quiet = traffic(http, service.base(), a, () -> sleep(a.baseline));
        System.out.println("  " + quiet.line("without the purge"));
        long readsBefore = pageReads(db, url);
        long[] removed = new long[1];
        long purgeStartedAt = System.currentTimeMillis();
        long start = System.nanoTime();
        Window beside = traffic(http, service.base(), a, () -> {
          JdbcIdempotency idem = JdbcIdempotency.builder().createSchema(false).build();
          try (Connection c = DriverManager.getConnection(url)) {
            removed[0] = idem.purgeExpired(c, a.batch);
          }
        });
        double seconds = (System.nanoTime() - start) / 1e9;
        long reads = pageReads(db, url) - readsBefore;
        // every record that had expired when the purge began must be gone, deleted by the purge
        // measured here: a count of rows/s over another deleter's work (the service's own scheduled
        // purge once halved a day's count) or over rows it left would be a wrong figure
        long left = KeyTableLoader.queryLong(url, "SELECT count(*) FROM idem_keys WHERE expires_at <= " + purgeStartedAt);
        if (left != 0 || removed[0] < a.expired) {
          throw new IllegalStateException(String.format(Locale.ROOT, "day %d: the purge deleted %,d of the %,d expired keys"
              + " loaded and left %,d that had expired before it began; its rate would not be the purge's", day, removed[0],
              a.expired, left));
        }
        System.out.println("  " + beside.line("with the purge"));
        System.out.printf(Locale.ROOT, "  purged %,d rows in %.0f s: %.0f rows/s, %.2f page reads a row%n", removed[0], seconds,
            removed[0] / seconds, reads / (double) removed[0]);
        traffic.append(quiet.line("day " + day + ", without the purge")).append('\n');
        traffic.append(beside.line("day " + day + ", with the purge")).append('\n');
        purges.append(String.format(Locale.ROOT, "| day %d | %,d | %.0f s | %.0f | %.2f |%n", day, removed[0], seconds,
            removed[0] / seconds, reads / (double) removed[0]));
        sizes.add(sizes(db, url).line("day " + day + ", right after its purge"));
        if (db == KeyTableLoader.Database.POSTGRES) {
          sizes.add(awaitAutovacuum(url, a.autovacuumWait, day));
        }
      }
      report.append("| purge | rows deleted | took | rows/s | page reads a row |\n|---|---:|---:|---:|---:|\n").append(purges).append('\n');
      report.append("| live traffic | window | ops/s | p50 ms | p99 ms | max ms | errors |\n|---|---|---|---|---|---|---|\n")
          .append(traffic).append('\n');
      report.append("| key table | rows | heap | indexes | total |\n|---|---:|---:|---:|---:|\n");
      sizes.forEach(s -> report.append(s).append('\n'));
      report.append('\n');
    }
  }

  @FunctionalInterface
  private interface Work {
    void run() throws Exception;
  }

  private static void sleep(int seconds) throws InterruptedException {
    Thread.sleep(seconds * 1000L);
  }

  /** Runs creates and replays of live keys while {@code work} runs, and measures them. */
  private static Window traffic(HttpClient http, URI base, Args a, Work work) throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong errors = new AtomicLong();
    List<LatencyStats> creates = new ArrayList<>();
    List<LatencyStats> replays = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 2 * a.clients; i++) {
      boolean create = i % 2 == 0;
      LatencyStats stats = new LatencyStats();
      (create ? creates : replays).add(stats);
      Thread t = new Thread(() -> {
        while (!stop.get()) {
          long start = System.nanoTime();
          try {
            if (create) {
              HttpLoad.send(http, base, "/notes", UUID.randomUUID().toString(), "live");
            } else {
              KeyTableLoader.replay(http, base, 1 + ThreadLocalRandom.current().nextLong(a.live), false);
            }
            stats.recordNanos(System.nanoTime() - start);
          } catch (IOException | InterruptedException e) {
            errors.incrementAndGet();
          }
        }
      });
      t.setDaemon(true);
      threads.add(t);
    }
    long start = System.nanoTime();
    threads.forEach(Thread::start);
    try {
      work.run();
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    LatencyStats c = new LatencyStats();
    creates.forEach(c::add);
    LatencyStats r = new LatencyStats();
    replays.forEach(r::add);
    return new Window(seconds, c, r, errors.get());
  }

  /**
   * Waits for PostgreSQL's autovacuum (server defaults) to finish a pass over the key table after a
   * purge: the pass that makes the purged rows' space usable again.
   *
   * @return the sizes line once it finished, or a line that says it had not
   */
  private static String awaitAutovacuum(String url, int seconds, int day) throws Exception {
    String count = "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'idem_keys'";
    long before = KeyTableLoader.queryLong(url, count);
    long start = System.nanoTime();
    long deadline = start + seconds * 1_000_000_000L;
    while (System.nanoTime() < deadline) {
      Thread.sleep(5_000);
      if (KeyTableLoader.queryLong(url, count) > before) {
        long waited = (System.nanoTime() - start) / 1_000_000_000L;
        System.out.printf(Locale.ROOT, "  autovacuum finished on the key table %d s after the purge%n", waited);
        return sizes(KeyTableLoader.Database.POSTGRES, url).line("day " + day + ", after autovacuum (" + waited + " s after the purge)");
      }
    }
    long dead = KeyTableLoader.queryLong(url, "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'idem_keys'");
    return sizes(KeyTableLoader.Database.POSTGRES, url).line(String.format(Locale.ROOT,
        "day %d, autovacuum not finished %d s after the purge (%,d dead rows)", day, seconds, dead));
  }

  /**
   * Pages read from disk into the database's cache so far: MariaDB's {@code Innodb_buffer_pool_reads}
   * (the whole server), PostgreSQL's heap and index blocks of the key table read from outside shared
   * buffers ({@code pg_statio_user_tables}; the OS cache may have served them). A purge's delta
   * counts the live traffic's reads beside it too, which are few next to the purge's own when the
   * table does not fit the cache.
   */
  private static long pageReads(KeyTableLoader.Database db, String url) throws SQLException {
    if (db == KeyTableLoader.Database.POSTGRES) {
      return KeyTableLoader.queryLong(url, "SELECT coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0)"
          + " FROM pg_statio_user_tables WHERE relname = 'idem_keys'");
    }
    return KeyTableLoader.queryLong(url, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
        + " WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_READS'");
  }

  private static Sizes sizes(KeyTableLoader.Database db, String url) throws SQLException {
    if (db == KeyTableLoader.Database.POSTGRES) {
      return new Sizes(KeyTableLoader.queryLong(url, "SELECT count(*) FROM idem_keys"),
          KeyTableLoader.queryLong(url, "SELECT pg_relation_size('idem_keys')"),
          KeyTableLoader.queryLong(url, "SELECT pg_indexes_size('idem_keys')"),
          KeyTableLoader.queryLong(url, "SELECT pg_total_relation_size('idem_keys')"));
    }
    MariadbDatabases.TableBytes t = MariadbDatabases.sizes(url);
    return new Sizes(t.rows(), t.data(), t.indexes(), t.data() + t.indexes());
  }
}
