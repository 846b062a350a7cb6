package dev.idem.benchmarks;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jetstream.JetStreamTransport;
import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.lab.jdbc.SimpleDataSource;
import dev.idem.outbox.Intent;
import dev.idem.outbox.IntentWriter;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.IntentTransport;
import dev.idem.rabbitmq.RabbitMqTransport;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The outbox's costs, measured on this machine:
 *
 * <ol>
 *   <li><b>write cost</b>: Idem transactional creates (effect INSERT and key row, in Idem's
 *       transaction) without and with one outbox intent recorded in the same transaction; closed
 *       loop, 1 and 4 clients, on SQLite and PostgreSQL. The two workloads alternate in rounds of
 *       equal length, so both see the same background load; the ratio is of their totals;
 *   <li><b>relay throughput</b>: {@link OutboxRelay#drain()} of pre-recorded intents to RabbitMQ
 *       (persistent messages, mandatory, publisher confirms, one quorum queue bound) and to NATS
 *       JetStream (file stream, acknowledged publishes with {@code Nats-Msg-Id}), one relay,
 *       batches of 100.
 * </ol>
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package -pl tools/idem-benchmarks -am && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.OutboxLoad --out docs/reports
 * }</pre>
 *
 * writes its section into {@code docs/reports/benchmarks.md} (between the {@value #BEGIN} and {@value
 * #END} markers, which {@code LoadHarness} keeps when it rewrites the file); without {@code --out}
 * it prints the section. Options: {@code --seconds N} per round (default 3), {@code --rounds N}
 * (default 3), {@code --intents N} per relay run (default 10000), {@code --postgres-url},
 * {@code --rabbitmq-uri}, {@code --nats-url}.
 */
public final class OutboxLoad {

  /** Marks the start of this command's section in benchmarks.md. */
  static final String BEGIN = "<!-- OutboxLoad: begin -->";
  /** Marks its end. */
  static final String END = "<!-- OutboxLoad: end -->";

  static final String COMMAND = "./mvnw -B -q -DskipTests package -pl tools/idem-benchmarks -am && "
      + "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.OutboxLoad --out docs/reports";

  private static final byte[] BODY = JsonBodies.of(200);
  private static final int[] CLIENTS = {1, 4};

  private record WriteCost(String database, int clients, double without, double with, List<Double> roundRatios) {}

  private record Relay(String broker, String database, int intents, int batch, double seconds, long sent) {}

  private OutboxLoad() {}

  /** The command line; picocli fills it. */
  @Command(name = "OutboxLoad", sortOptions = false, usageHelpWidth = 110,
      customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.OutboxLoad [options]",
      description = "The outbox's write cost and the relay's throughput; without --out, prints the section.")
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", description = "Writes the section into DIR/benchmarks.md.")
    Path out;

    @Option(names = "--seconds", paramLabel = "N", defaultValue = "3", description = "Seconds per round (default: ${DEFAULT-VALUE}).")
    int seconds;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3", description = "Rounds per client count (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--intents", paramLabel = "N", defaultValue = "10000", description = "Intents the relay drains (default: ${DEFAULT-VALUE}).")
    int intents;

    @Option(names = "--postgres-url", paramLabel = "URL", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL admin URL (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = "--rabbitmq-uri", paramLabel = "URI", defaultValue = "amqp://guest:guest@127.0.0.1:5672",
        description = "RabbitMQ (default: ${DEFAULT-VALUE}).")
    String rabbitUri;

    @Option(names = "--nats-url", paramLabel = "URL", defaultValue = "nats://127.0.0.1:4222", description = "NATS (default: ${DEFAULT-VALUE}).")
    String natsUrl;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }

  /**
   * @param args see the class description
   * @throws Exception if a database or broker cannot be used
   */
  public static void main(String[] args) throws Exception {
    Args a = new Args();
    CommandLine cl = new CommandLine(a);
    try {
      cl.parseArgs(args);
    } catch (ParameterException e) {
      System.err.println("OutboxLoad: " + e.getMessage());
      cl.usage(System.err);
      System.exit(2);
    }
    if (cl.isUsageHelpRequested()) {
      cl.usage(System.out);
      return;
    }
    Path out = a.out;
    int seconds = a.seconds;
    int rounds = a.rounds;
    int intents = a.intents;
    String postgresUrl = a.postgresUrl;
    String rabbitUri = a.rabbitUri;
    String natsUrl = a.natsUrl;
    Instant started = Instant.now();
    double loadBefore = Machine.loadAverage();
    List<WriteCost> costs = new ArrayList<>();
    List<Relay> relays = new ArrayList<>();
    Path sqliteDir = Files.createTempDirectory("idem-outbox-bench-");
    String pgName = "idem_bench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (Connection admin = DriverManager.getConnection(postgresUrl); Statement st = admin.createStatement()) {
      st.execute("CREATE DATABASE " + pgName);
    }
    try {
      Db sqlite = new Db("sqlite", "jdbc:sqlite:" + sqliteDir.resolve("bench.db"));
      Db postgres = new Db("postgres", SqlBackend.withDatabase(postgresUrl, pgName));
      for (Db db : List.of(sqlite, postgres)) {
        for (int clients : CLIENTS) {
          costs.add(writeCost(db, clients, seconds, rounds));
          System.err.printf(Locale.ROOT, "write cost %s %d clients: %.0f vs %.0f ops/s%n", db.name, clients,
              costs.get(costs.size() - 1).without, costs.get(costs.size() - 1).with);
        }
      }
      for (Db db : List.of(sqlite, postgres)) {
        relays.add(relayToRabbitMq(db, rabbitUri, intents));
        System.err.println(relays.get(relays.size() - 1));
        relays.add(relayToJetStream(db, natsUrl, intents));
        System.err.println(relays.get(relays.size() - 1));
      }
    } finally {
      try (Connection admin = DriverManager.getConnection(postgresUrl); Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + pgName + " WITH (FORCE)");
      }
      try (var files = Files.walk(sqliteDir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    String section = section(costs, relays, started, loadBefore, Machine.loadAverage(), seconds, rounds, String.join(" ", args));
    if (out == null) {
      System.out.print(section);
      return;
    }
    Path md = out.resolve("benchmarks.md");
    String text = Files.exists(md) ? Files.readString(md) : "# Benchmarks\n\n";
    Files.writeString(md, withSection(text, section), StandardCharsets.UTF_8);
    System.err.println("wrote the outbox section of " + md);
  }

  /** @return {@code text} with its marked outbox section replaced by {@code section}, or inserted before "## What each workload does" */
  static String withSection(String text, String section) {
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    if (begin >= 0 && end > begin) {
      return text.substring(0, begin) + section + text.substring(end + END.length() + 1);
    }
    int at = text.indexOf("## What each workload does");
    return at < 0 ? text + "\n" + section : text.substring(0, at) + section + "\n" + text.substring(at);
  }

  /** @return the marked section of {@code text}, with its markers and final newline, or {@code null} */
  static String sectionOf(String text) {
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    return begin >= 0 && end > begin ? text.substring(begin, end + END.length()) + "\n" : null;
  }

  // ---- write cost ----

  private static WriteCost writeCost(Db db, int clients, int seconds, int rounds) throws Exception {
    String suffix = db.name + "_" + clients;
    String effects = "bench_outbox_effects_" + suffix;
    JdbcIdempotency idem = JdbcIdempotency.builder().table("bench_outbox_keys_" + suffix).build();
    Outbox outbox = Outbox.builder().table("bench_outbox_" + suffix).build();
    try (Connection c = db.open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + effects + " (tag VARCHAR(64) PRIMARY KEY, payload VARCHAR(400) NOT NULL)");
      idem.createSchema(c);
      outbox.createSchema(c);
    }
    String insert = "INSERT INTO " + effects + " (tag, payload) VALUES (?, ?)";
    Intent intent = Intent.rabbitMq("bench.orders", "order.created", BODY).withHeader("content-type", "application/json");
    // warm-up: both workloads, one round each
    run(db, clients, Duration.ofSeconds(1), idem, outbox, insert, intent, false);
    run(db, clients, Duration.ofSeconds(1), idem, outbox, insert, intent, true);
    long without = 0;
    long with = 0;
    List<Double> ratios = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      long a = run(db, clients, Duration.ofSeconds(seconds), idem, outbox, insert, intent, false);
      long b = run(db, clients, Duration.ofSeconds(seconds), idem, outbox, insert, intent, true);
      without += a;
      with += b;
      ratios.add(a == 0 ? Double.NaN : (double) b / a);
    }
    double total = (double) seconds * rounds;
    return new WriteCost(db.name, clients, without / total, with / total, ratios);
  }

  /** @return operations completed by {@code clients} threads in {@code length} */
  private static long run(Db db, int clients, Duration length, JdbcIdempotency idem, Outbox outbox, String insert,
      Intent intent, boolean withIntent) throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong done = new AtomicLong();
    List<Exception> failures = new CopyOnWriteArrayList<>();
    CountDownLatch ready = new CountDownLatch(clients);
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < clients; t++) {
      Thread thread = new Thread(() -> {
        try (Connection c = db.open()) {
          ready.countDown();
          go.await();
          while (!stop.get()) {
            String key = UUID.randomUUID().toString();
            IdempotentRequest request = IdempotentRequest.ofJson("bench-user", "POST /orders", key, BODY);
            Effect effect = ctx -> {
              Connection conn = ctx.connection();
              try (PreparedStatement ps = conn.prepareStatement(insert)) {
                ps.setString(1, key);
                ps.setString(2, new String(BODY, StandardCharsets.UTF_8));
                ps.executeUpdate();
              }
              return StoredResponse.of(201, "{\"id\":1}");
            };
            idem.execute(c, request, withIntent ? outbox.effect(request, (conn, intents) -> {
              StoredResponse response = effect.run(EffectContext.ofTransaction(conn));
              intents.add(intent);
              return response;
            }) : effect);
            done.incrementAndGet();
          }
        } catch (Exception e) {
          failures.add(e);
          ready.countDown();
        }
      }, "outbox-bench-" + t);
      threads.add(thread);
      thread.start();
    }
    ready.await();
    long before = done.get();
    go.countDown();
    Thread.sleep(length.toMillis());
    long count = done.get() - before;
    stop.set(true);
    for (Thread t : threads) {
      t.join();
    }
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a client failed", failures.get(0));
    }
    return count;
  }

  // ---- relay throughput ----

  /** Records {@code n} intents, 500 operations per transaction, each with one intent. */
  private static Outbox fill(Db db, String table, int n, Intent intent) throws SQLException {
    Outbox outbox = Outbox.builder().table(table).build();
    try (Connection c = db.open()) {
      outbox.createSchema(c);
      c.setAutoCommit(false);
      for (int i = 0; i < n; i++) {
        IdempotentRequest request = IdempotentRequest.ofJson("bench-user", "POST /orders", UUID.randomUUID().toString(), BODY);
        try (IntentWriter w = outbox.writer(c, request)) {
          w.add(intent);
        }
        if (i % 500 == 499) {
          c.commit();
        }
      }
      c.commit();
      c.setAutoCommit(true);
    }
    return outbox;
  }

  private static Relay drain(String broker, Db db, Outbox outbox, IntentTransport transport, int n) throws Exception {
    OutboxRelay relay = OutboxRelay.builder(outbox, db).transport(transport).batchSize(100).build();
    long t0 = System.nanoTime();
    OutboxRelay.Round total = relay.drain();
    double s = (System.nanoTime() - t0) / 1e9;
    if (total.sent() != n) {
      throw new IllegalStateException(broker + " relay sent " + total.sent() + " of " + n + ": " + total);
    }
    return new Relay(broker, db.name, n, 100, s, total.sent());
  }

  private static Relay relayToRabbitMq(Db db, String uri, int n) throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(uri);
    String name = "idem.bench." + UUID.randomUUID().toString().substring(0, 8);
    try (var conn = factory.newConnection("idem-outbox-bench")) {
      try (Channel ch = conn.createChannel()) {
        ch.exchangeDeclare(name, "direct", true);
        ch.queueDeclare(name, true, false, false, Map.of("x-queue-type", "quorum"));
        ch.queueBind(name, name, "k");
      }
      try {
        Outbox outbox = fill(db, "bench_relay_rabbitmq_" + db.name, n,
            Intent.rabbitMq(name, "k", BODY).withHeader("content-type", "application/json"));
        try (RabbitMqTransport transport = new RabbitMqTransport(conn)) {
          return drain("RabbitMQ " + conn.getServerProperties().get("version"), db, outbox, transport, n);
        }
      } finally {
        try (Channel ch = conn.createChannel()) {
          ch.queueDelete(name);
          ch.exchangeDelete(name);
        }
      }
    }
  }

  private static Relay relayToJetStream(Db db, String url, int n) throws Exception {
    String name = "IDEM_BENCH_" + UUID.randomUUID().toString().substring(0, 8).toUpperCase(Locale.ROOT);
    String subject = "idem.bench." + name.toLowerCase(Locale.ROOT);
    try (var nats = Nats.connect(url)) {
      JetStreamManagement jsm = nats.jetStreamManagement();
      jsm.addStream(StreamConfiguration.builder().name(name).subjects(subject).storageType(StorageType.File)
          .duplicateWindow(Duration.ofMinutes(2)).build());
      try {
        Outbox outbox = fill(db, "bench_relay_jetstream_" + db.name, n, Intent.jetStream(subject, BODY));
        return drain("NATS JetStream " + nats.getServerInfo().getVersion(), db, outbox,
            new JetStreamTransport(nats.jetStream()), n);
      } finally {
        jsm.deleteStream(name);
      }
    }
  }

  // ---- report ----

  private static String section(List<WriteCost> costs, List<Relay> relays, Instant started, double loadBefore,
      double loadAfter, int seconds, int rounds, String argv) {
    StringBuilder md = new StringBuilder();
    md.append(BEGIN).append('\n');
    md.append("## Outbox: write cost and relay throughput\n\n");
    md.append("Written by `dev.idem.benchmarks.OutboxLoad`").append(argv.isEmpty() ? "" : " (`" + argv + "`)")
        .append(", started ").append(started.truncatedTo(ChronoUnit.SECONDS)).append("; run it again with:\n\n");
    md.append("```sh\n").append(COMMAND).append("\n```\n\n");
    md.append(String.format(Locale.ROOT, "Machine: %d cores, **shared with other work while this ran** (load average"
        + " %.2f at the start, %.2f at the end), with PostgreSQL, RabbitMQ and NATS on the same cores. Read the ratios,"
        + " which compare runs made seconds apart, rather than the absolute numbers.%n%n",
        Runtime.getRuntime().availableProcessors(), loadBefore, loadAfter));
    md.append("**Write cost.** An Idem transactional create (Idem's transaction: claim, effect INSERT of a 200-byte row,"
        + " stored 201) without and with one outbox intent (a 200-byte RabbitMQ message) recorded in the same"
        + " transaction. Closed loop, one connection per client; the two workloads alternate in ")
        .append(rounds).append(" rounds of ").append(seconds).append(" s each after a 1 s warm-up of both; ops/s over"
            + " all rounds. SQLite: WAL file; PostgreSQL: `synchronous_commit=on`.\n\n");
    md.append("| database | clients | without intent (ops/s) | with 1 intent (ops/s) | ratio with / without | ratio per round |\n");
    md.append("|---|---:|---:|---:|---:|---|\n");
    for (WriteCost c : costs) {
      md.append(String.format(Locale.ROOT, "| %s | %d | %,.0f | %,.0f | %.2fx | %s |%n", c.database, c.clients, c.without,
          c.with, c.with / c.without, String.join(", ", c.roundRatios.stream()
              .map(r -> String.format(Locale.ROOT, "%.2f", r)).toList())));
    }
    md.append("\n**Relay throughput.** One `OutboxRelay` draining intents recorded beforehand, batches of 100: per batch"
        + " one claim transaction, the publishes, then one transaction marking them sent. RabbitMQ: persistent,"
        + " mandatory, publisher confirms awaited per batch, one durable quorum queue bound. JetStream: file-backed"
        + " stream with a 2-minute duplicate window, every publish acknowledged by the stream.\n\n");
    md.append("| broker | outbox on | intents | seconds | messages/s |\n|---|---|---:|---:|---:|\n");
    for (Relay r : relays) {
      md.append(String.format(Locale.ROOT, "| %s | %s | %,d | %.1f | %,.0f |%n", r.broker, r.database, r.intents,
          r.seconds, r.sent / r.seconds));
    }
    md.append('\n').append(END).append('\n');
    return md.toString();
  }

  /**
   * A database: a URL and connections set up as in the other benchmarks ({@link JdbcTarget#open()}:
   * lock waits, WAL on SQLite), plus {@code synchronous = NORMAL} on SQLite.
   */
  private static final class Db extends SimpleDataSource {
    final String name;
    final String url;
    private final JdbcTarget target;

    Db(String name, String url) {
      this.name = name;
      this.url = url;
      this.target = JdbcTarget.of(url);
    }

    Connection open() throws SQLException {
      Connection c = target.open();
      if (name.equals("sqlite")) {
        try (Statement st = c.createStatement()) {
          st.execute("PRAGMA synchronous = NORMAL");
        } catch (SQLException | RuntimeException e) {
          c.close();
          throw e;
        }
      }
      return c;
    }

    @Override
    public Connection getConnection() throws SQLException {
      return open();
    }
  }
}
