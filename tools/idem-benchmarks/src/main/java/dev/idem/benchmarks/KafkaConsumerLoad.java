package dev.idem.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.kafka.KafkaIdempotentConsumer;
import dev.idem.kafka.KafkaTransport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import kafka.testkit.KafkaClusterTestKit;
import kafka.testkit.TestKitNodes;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The idempotent Kafka consumer's cost, measured on this machine: messages/s of {@link
 * KafkaIdempotentConsumer} (the record's effect, its idempotency key and stored response in one
 * PostgreSQL transaction, the offset committed after it; per poll or per record) against a plain
 * consumer doing the same INSERT in its own transaction and committing per poll, after a warm-up
 * pass of each that is not counted. Every variant
 * reads the same {@code --records} records (200-byte values, a unique {@code message-id} header)
 * of one 4-partition topic with a consumer group of its own, with 1 and 4 members; the variants
 * alternate in {@code --rounds} rounds (their order turning each round), so all see the same
 * background load; each variant's ratio to plain is the median (and range) of its per-round
 * ratios against the plain consumer of the same round. The time is from the first record handled
 * to the last (the group's join is left out).
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package -pl tools/idem-benchmarks -am && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.KafkaConsumerLoad --out docs/reports
 * }</pre>
 *
 * Without {@code --bootstrap-servers} it starts a one-node KRaft broker in this JVM (Kafka's own
 * broker jars, logs in a temporary directory), so the broker shares the JVM and the cores.
 * Writes its section into {@code docs/reports/benchmarks.md} between {@value #BEGIN} and {@value #END}, or
 * prints it without {@code --out}.
 */
public final class KafkaConsumerLoad {

  static final String BEGIN = "<!-- KafkaConsumerLoad: begin -->";
  static final String END = "<!-- KafkaConsumerLoad: end -->";
  static final String COMMAND = "./mvnw -B -q -DskipTests package -pl tools/idem-benchmarks -am && "
      + "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.KafkaConsumerLoad --out docs/reports";

  private static final String[] VARIANTS = {"plain, commit per poll", "Idem, commit per poll", "Idem, commit per record"};

  private KafkaConsumerLoad() {}

  /** The command line. */
  static final class Args {
    @Option(names = "--out", paramLabel = "DIR", description = "Write the section into DIR/benchmarks.md.")
    Path out;

    @Option(names = "--records", defaultValue = "5000", description = "Records in the topic (default: ${DEFAULT-VALUE}).")
    int records;

    @Option(names = "--rounds", defaultValue = "5", description = "Rounds of every variant (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--postgres-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
        description = "PostgreSQL; a database of its own is made and dropped (default: ${DEFAULT-VALUE}).")
    String postgresUrl;

    @Option(names = "--bootstrap-servers", description = "A Kafka broker to use instead of one started in this JVM.")
    String servers;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
    boolean help;
  }

  /** One variant's result in one round. */
  record Run(String variant, int members, int round, long records, double seconds, long effects) {
    double perSecond() {
      return records / seconds;
    }
  }

  /**
   * @param args see the class description
   * @throws Exception if the database or the broker cannot be used
   */
  public static void main(String[] args) throws Exception {
    try {
      run(args);
    } catch (Exception | Error e) {
      e.printStackTrace();
      System.exit(1); // the in-JVM broker's non-daemon threads would keep the JVM up
    }
  }

  private static void run(String[] args) throws Exception {
    Args a = new Args();
    CommandLine cl = new CommandLine(a);
    try {
      cl.parseArgs(args);
    } catch (ParameterException e) {
      System.err.println("KafkaConsumerLoad: " + e.getMessage());
      cl.usage(System.err);
      System.exit(2);
    }
    if (cl.isUsageHelpRequested()) {
      cl.usage(System.out);
      return;
    }
    Instant started = Instant.now();
    double loadBefore = Machine.loadAverage();
    KafkaClusterTestKit cluster = null;
    String servers = a.servers;
    String brokerNote;
    if (servers == null) {
      cluster = new KafkaClusterTestKit.Builder(
          new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build())
          .setConfigProp("group.initial.rebalance.delay.ms", "0")
          .setConfigProp("offsets.topic.replication.factor", "1")
          .build();
      cluster.format();
      cluster.startup();
      servers = cluster.bootstrapServers();
      awaitBroker(servers); // not the test kit's own wait: it reports through JUnit's assertions
      brokerNote = "a one-node KRaft broker (Kafka " + org.apache.kafka.common.utils.AppInfoParser.getVersion()
          + ") in the benchmark's JVM (its log on the local disk)";
    } else {
      brokerNote = "the broker at " + servers;
    }
    String pgName = "idem_bench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (Connection admin = DriverManager.getConnection(a.postgresUrl); Statement st = admin.createStatement()) {
      st.execute("CREATE DATABASE " + pgName);
    }
    List<Run> runs = new ArrayList<>();
    String topic = "bench-" + UUID.randomUUID().toString().substring(0, 8);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(SqlBackend.withDatabase(a.postgresUrl, pgName));
    config.setMaximumPoolSize(8);
    try (HikariDataSource ds = new HikariDataSource(config);
        Admin admin = Admin.create(Map.of("bootstrap.servers", servers))) {
      admin.createTopics(List.of(new NewTopic(topic, 4, (short) 1))).all().get(30, TimeUnit.SECONDS);
      produce(servers, topic, a.records);
      JdbcIdempotency idem = JdbcIdempotency.builder().table("bench_keys").dataSource(ds).build();
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        idem.createSchema(c);
        st.execute("CREATE TABLE bench_effects (id VARCHAR(64) PRIMARY KEY, body VARCHAR(300) NOT NULL)");
      }
      // warm-up, not counted: the JIT, the pool and the broker's page cache, for both kinds of consumer
      plain(servers, topic, topic + "-warm-plain", ds, a.records, 1, 0);
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        st.execute("TRUNCATE bench_effects");
      }
      idem(servers, topic, topic + "-warm-idem", ds, idem, a.records, 1, 0, KafkaIdempotentConsumer.Commit.POLL);
      for (int round = 1; round <= a.rounds; round++) {
        for (int members : new int[] {1, 4}) {
          for (int step = 0; step < VARIANTS.length; step++) {
            // the order of the variants turns each round, so none always runs first after a join
            int v = (step + round) % VARIANTS.length;
            try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
              st.execute("TRUNCATE bench_effects");
              st.execute("TRUNCATE bench_keys");
            }
            String group = topic + "-" + round + "-" + members + "-" + v;
            Run run = v == 0
                ? plain(servers, topic, group, ds, a.records, members, round)
                : idem(servers, topic, group, ds, idem, a.records, members, round,
                    v == 1 ? KafkaIdempotentConsumer.Commit.POLL : KafkaIdempotentConsumer.Commit.RECORD);
            runs.add(run);
            System.err.printf(Locale.ROOT, "round %d, %d member(s), %s: %,.0f records/s (%d effects)%n", round, members,
                run.variant(), run.perSecond(), run.effects());
          }
        }
      }
    } finally {
      try (Connection admin = DriverManager.getConnection(a.postgresUrl); Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + pgName + " WITH (FORCE)");
      }
      if (cluster != null) {
        cluster.close();
      }
    }
    String section = section(runs, a.records, a.rounds, started, loadBefore, Machine.loadAverage(), brokerNote);
    if (a.out == null) {
      System.out.print(section);
      System.out.flush();
      System.exit(0); // the broker's non-daemon threads may outlive its close
    }
    Path md = a.out.resolve("benchmarks.md");
    String text = Files.exists(md) ? Files.readString(md) : "# Benchmarks\n\n";
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    String updated;
    if (begin >= 0 && end > begin) {
      updated = text.substring(0, begin) + section + text.substring(end + END.length() + 1);
    } else {
      int at = text.indexOf("## What each workload does");
      updated = at < 0 ? text + "\n" + section : text.substring(0, at) + section + "\n" + text.substring(at);
    }
    Files.writeString(md, updated, StandardCharsets.UTF_8);
    System.err.println("wrote the Kafka consumer section of " + md);
    System.exit(0);
  }

  private static void awaitBroker(String servers) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", servers))) {
      while (true) {
        try {
          if (!admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).isEmpty()) {
            return;
          }
        } catch (Exception e) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("the in-JVM Kafka broker did not start within 60 s: " + e, e);
          }
        }
        Thread.sleep(200);
      }
    }
  }

  private static void produce(String servers, String topic, int records) throws Exception {
    byte[] value = new byte[200];
    Arrays.fill(value, (byte) 'x');
    try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(KafkaTransport.idempotent(
        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers, ProducerConfig.LINGER_MS_CONFIG, "5")))) {
      for (int i = 0; i < records; i++) {
        String id = "msg-" + i;
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, id.getBytes(StandardCharsets.UTF_8), value);
        r.headers().add(KafkaTransport.ID_HEADER, id.getBytes(StandardCharsets.UTF_8));
        p.send(r);
      }
      p.flush();
    }
  }

  private static Map<String, Object> consumerConfig(String servers, String group) {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    return c;
  }

  private static void insert(Connection c, String id, byte[] body) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO bench_effects (id, body) VALUES (?, ?)")) {
      ps.setString(1, id);
      ps.setString(2, new String(body, StandardCharsets.UTF_8));
      ps.executeUpdate();
    }
  }

  /** Times from the first record handled to the last. */
  private static final class Clock {
    final AtomicLong handled = new AtomicLong();
    volatile long first;
    volatile long last;

    void tick() {
      long now = System.nanoTime();
      if (handled.getAndIncrement() == 0) {
        first = now;
      }
      last = now;
    }

    void await(long records) throws InterruptedException {
      long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
      while (handled.get() < records && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      if (handled.get() < records) {
        throw new IllegalStateException("only " + handled.get() + " of " + records + " records handled in 10 minutes");
      }
    }

    double seconds() {
      return (last - first) / 1e9;
    }
  }

  private static Run plain(String servers, String topic, String group, HikariDataSource ds, int records, int members, int round)
      throws Exception {
    Clock clock = new Clock();
    List<KafkaConsumer<byte[], byte[]>> clients = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int m = 0; m < members; m++) {
      KafkaConsumer<byte[], byte[]> client = new KafkaConsumer<>(consumerConfig(servers, group));
      clients.add(client);
      Thread t = new Thread(() -> {
        try {
          client.subscribe(List.of(topic));
          while (true) {
            Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : client.poll(Duration.ofMillis(100))) {
              try (Connection c = ds.getConnection()) {
                insert(c, new String(r.headers().lastHeader(KafkaTransport.ID_HEADER).value(), StandardCharsets.UTF_8), r.value());
              }
              done.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
              clock.tick();
            }
            if (!done.isEmpty()) {
              client.commitSync(done);
            }
          }
        } catch (WakeupException e) {
          // stopped
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        } finally {
          client.close(Duration.ofSeconds(5));
        }
      }, "plain-" + m);
      threads.add(t);
      t.start();
    }
    clock.await(records);
    clients.forEach(KafkaConsumer::wakeup);
    for (Thread t : threads) {
      t.join(30_000);
    }
    return new Run(VARIANTS[0], members, round, records, clock.seconds(), effects(ds));
  }

  private static Run idem(String servers, String topic, String group, HikariDataSource ds, JdbcIdempotency idem, int records,
      int members, int round, KafkaIdempotentConsumer.Commit commit) throws Exception {
    Clock clock = new Clock();
    IdempotentConsumer consumer = IdempotentConsumer.builder("bench", idem,
        (c, m) -> insert(c, m.header(KafkaTransport.ID_HEADER), m.body())).build();
    try (KafkaIdempotentConsumer running = KafkaIdempotentConsumer.builder(consumerConfig(servers, group), List.of(topic), consumer)
        .concurrency(members).commit(commit)
        .onVerdict((m, v) -> {
          if (v.action() == Verdict.Action.ACK) {
            clock.tick();
          }
        })
        .build()) {
      running.start();
      clock.await(records);
    }
    return new Run(commit == KafkaIdempotentConsumer.Commit.POLL ? VARIANTS[1] : VARIANTS[2], members, round, records,
        clock.seconds(), effects(ds));
  }

  private static long effects(HikariDataSource ds) throws SQLException {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM bench_effects")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static String section(List<Run> runs, int records, int rounds, Instant started, double loadBefore, double loadAfter,
      String brokerNote) {
    StringBuilder md = new StringBuilder();
    md.append(BEGIN).append('\n');
    md.append("## Kafka: the idempotent consumer against a plain one\n\n");
    md.append("Written by `dev.idem.benchmarks.KafkaConsumerLoad` (`--out docs/reports`), started ")
        .append(started.truncatedTo(ChronoUnit.SECONDS)).append("; run it again with:\n\n```sh\n").append(COMMAND)
        .append("\n```\n\n");
    md.append(String.format(Locale.ROOT, "Machine: %d cores, shared with other work while this ran (load average %.2f at "
        + "the start, %.2f at the end), with PostgreSQL and %s, all on the same cores. Read the ratios, which compare runs made "
        + "seconds apart, rather than the absolute numbers.%n%n", Runtime.getRuntime().availableProcessors(), loadBefore,
        loadAfter, brokerNote));
    md.append(String.format(Locale.ROOT, "%,d records of 200 bytes in one topic of 4 partitions, each with a unique "
        + "`message-id` header; every variant reads all of them with a consumer group of its own and makes one INSERT "
        + "of a 200-byte row per record on PostgreSQL (`synchronous_commit=on`, a pool of 8). **Plain**: the INSERT in "
        + "its own transaction, the offsets committed after each poll. **Idem**: `KafkaIdempotentConsumer`, the INSERT, "
        + "the idempotency key and its stored response in one transaction, the offset committed after each poll or "
        + "after each record. After a warm-up of a plain and an Idem pass, not counted, the variants alternate in %d "
        + "rounds (their order turning each round); records/s from the first record handled to the last.%n%n", records, rounds));
    md.append("| members | variant | records/s, median of rounds (range) | ratio to plain, median of rounds (range) "
        + "| over all rounds | per round | effects |\n|---:|---|---:|---:|---:|---|---:|\n");
    for (int members : new int[] {1, 4}) {
      double plainAll = rate(runs, VARIANTS[0], members);
      for (String variant : VARIANTS) {
        List<Double> rates = new ArrayList<>();
        List<Double> ratios = new ArrayList<>();
        List<String> perRound = new ArrayList<>();
        long effects = 0;
        for (Run r : runs) {
          if (r.variant().equals(variant) && r.members() == members) {
            rates.add(r.perSecond());
            perRound.add(String.format(Locale.ROOT, "%,.0f", r.perSecond()));
            effects = r.effects();
            for (Run p : runs) { // the plain consumer of the same round and member count
              if (p.variant().equals(VARIANTS[0]) && p.members() == members && p.round() == r.round()) {
                ratios.add(r.perSecond() / p.perSecond());
              }
            }
          }
        }
        Rounds.Spread rate = Rounds.Spread.of(rates);
        Rounds.Spread ratio = Rounds.Spread.of(ratios);
        md.append(String.format(Locale.ROOT, "| %d | %s | %,.0f (%,.0f to %,.0f) | %.2fx (%.2fx to %.2fx) | %.2fx | %s | %,d |%n",
            members, variant, rate.median(), rate.min(), rate.max(), ratio.median(), ratio.min(), ratio.max(),
            rate(runs, variant, members) / plainAll, String.join(", ", perRound), effects));
      }
    }
    md.append("\nRatio to plain: each round's records/s over the plain consumer's of the same round and member count, "
        + "the median of those and their range; over all rounds: all records over all the variant's time, against the "
        + "same for the plain consumer.\n");
    md.append("\nEffects: rows in the effect table after the variant's last round (one per record: no run was "
        + "interrupted, so there was nothing to replay). What the Idem variants buy is in `idem lab --queue --broker "
        + "kafka` and [docs/kafka.md](../kafka.md): a record redelivered after a crash or a rebalance runs nothing.\n");
    md.append(END).append('\n');
    return md.toString();
  }

  private static double rate(List<Run> runs, String variant, int members) {
    long records = 0;
    double seconds = 0;
    for (Run r : runs) {
      if (r.variant().equals(variant) && r.members() == members) {
        records += r.records();
        seconds += r.seconds();
      }
    }
    return records / seconds;
  }
}
