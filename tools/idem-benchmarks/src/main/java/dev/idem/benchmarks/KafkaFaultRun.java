package dev.idem.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.kafka.KafkaRecordHandler;
import dev.idem.kafka.KafkaTransport;
import java.nio.charset.StandardCharsets;
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
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import kafka.testkit.KafkaClusterTestKit;
import kafka.testkit.TestKitNodes;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A fault run of the idempotent Kafka consumer: while a producer writes records at a steady rate
 * into a topic of 6 partitions, a group of members handles them, and every few seconds one member
 * is <b>killed</b> (it stops right after a record's database commit, before that offset's commit,
 * and its client is dropped without committing: the partition's next owner polls the record again)
 * and a new member is <b>added</b> (the group rebalances each time). The same faults, at the same
 * points, hit two groups side by side: <b>naive</b> (the INSERT, then the offset commit) and
 * <b>protected</b> ({@link KafkaRecordHandler}: the INSERT and the record's idempotency key in one
 * transaction, then the offset commit). Afterwards every record's effects are counted in
 * PostgreSQL: duplicates (more than one row) and lost records (none).
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package -pl tools/idem-benchmarks -am && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.KafkaFaultRun
 * }</pre>
 *
 * Options (positional, all optional): seconds of load (default 40), records/s (default 100),
 * seconds between kills (default 4), the PostgreSQL URL. The broker is a one-node KRaft broker in
 * this JVM. Broker restarts are not part of this run.
 */
public final class KafkaFaultRun {

  private KafkaFaultRun() {}

  /** Thrown inside a member to stand for its process being killed. */
  private static final class Killed extends RuntimeException {
    private static final long serialVersionUID = 1L;
  }

  /** One group of members, naive or protected. */
  private static final class Group {
    final String name;
    final boolean protectedVariant;
    final List<Member> members = new CopyOnWriteArrayList<>();
    final AtomicInteger kills = new AtomicInteger();
    final AtomicLong handled = new AtomicLong();

    Group(String name, boolean protectedVariant) {
      this.name = name;
      this.protectedVariant = protectedVariant;
    }
  }

  /** A group member on a thread of its own. */
  private static final class Member implements Runnable, ConsumerRebalanceListener {
    final Group group;
    final KafkaConsumer<byte[], byte[]> client;
    final KafkaRecordHandler handler;
    final HikariDataSource ds;
    volatile boolean killAfterNextCommit;
    volatile boolean stop;
    Thread thread;

    Member(Group group, Map<String, Object> config, KafkaRecordHandler handler, HikariDataSource ds) {
      this.group = group;
      this.client = new KafkaConsumer<>(config);
      this.handler = handler;
      this.ds = ds;
    }

    @Override
    public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {
      handler.forget(partitions);
    }

    @Override
    public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
      // nothing pending: every handled record was committed before the poll
    }

    @Override
    public void run() {
      try {
        client.subscribe(List.of(TOPIC), this);
        while (!stop) {
          for (ConsumerRecord<byte[], byte[]> r : client.poll(Duration.ofMillis(100))) {
            TopicPartition tp = new TopicPartition(r.topic(), r.partition());
            if (group.protectedVariant) {
              Verdict v = handler.handle(r);
              if (v.action() == Verdict.Action.RETRY) {
                client.seek(tp, r.offset());
                break;
              }
            } else {
              try (Connection c = ds.getConnection()) {
                insert(c, group.name, id(r));
              }
            }
            group.handled.incrementAndGet();
            if (killAfterNextCommit) {
              throw new Killed(); // after the database commit, before the offset commit
            }
            client.commitSync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)));
          }
        }
        client.close(Duration.ofSeconds(5));
      } catch (Killed e) {
        group.kills.incrementAndGet();
        client.close(Duration.ZERO); // no commit: the record goes to the partition's next owner
      } catch (KafkaException | SQLException e) {
        System.err.println(group.name + " member failed: " + e);
        client.close(Duration.ZERO);
      }
    }
  }

  static final String TOPIC = "fault-" + UUID.randomUUID().toString().substring(0, 8);

  static String id(ConsumerRecord<byte[], byte[]> r) {
    return new String(r.headers().lastHeader(KafkaTransport.ID_HEADER).value(), StandardCharsets.UTF_8);
  }

  static void insert(Connection c, String variant, String id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO fault_effects (variant, id) VALUES (?, ?)")) {
      ps.setString(1, variant);
      ps.setString(2, id);
      ps.executeUpdate();
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
      System.exit(1);
    }
    System.exit(0); // the in-JVM broker's threads would keep the JVM up
  }

  private static void run(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 40;
    int rate = args.length > 1 ? Integer.parseInt(args[1]) : 100;
    int killEvery = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    String postgresUrl = args.length > 3 ? args[3] : "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";
    Instant started = Instant.now();
    KafkaClusterTestKit cluster = new KafkaClusterTestKit.Builder(
        new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build())
        .setConfigProp("group.initial.rebalance.delay.ms", "0")
        .setConfigProp("offsets.topic.replication.factor", "1")
        .build();
    cluster.format();
    cluster.startup();
    String servers = cluster.bootstrapServers();
    String pgName = "idem_fault_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (Connection admin = DriverManager.getConnection(postgresUrl); Statement st = admin.createStatement()) {
      st.execute("CREATE DATABASE " + pgName);
    }
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(SqlBackend.withDatabase(postgresUrl, pgName));
    hc.setMaximumPoolSize(10);
    try (HikariDataSource ds = new HikariDataSource(hc); Admin admin = Admin.create(Map.of("bootstrap.servers", servers))) {
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (true) {
        try {
          admin.createTopics(List.of(new NewTopic(TOPIC, 6, (short) 1))).all().get(10, TimeUnit.SECONDS);
          break;
        } catch (Exception e) {
          if (System.nanoTime() > deadline) {
            throw e;
          }
          Thread.sleep(500);
        }
      }
      JdbcIdempotency idem = JdbcIdempotency.builder().table("fault_keys").dataSource(ds).build();
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        idem.createSchema(c);
        st.execute("CREATE TABLE fault_effects (variant VARCHAR(16) NOT NULL, id VARCHAR(64) NOT NULL)");
      }
      IdempotentConsumer consumer = IdempotentConsumer.builder("fault", idem, (c, m) -> insert(c, "protected",
          m.header(KafkaTransport.ID_HEADER))).build();
      KafkaRecordHandler handler = new KafkaRecordHandler(consumer, KafkaRecordHandler.KeySource.idHeader(),
          KafkaRecordHandler.DeadLetter.haltPartition());
      Group naive = new Group("naive", false);
      Group prot = new Group("protected", true);
      List<Group> groups = List.of(naive, prot);
      for (Group g : groups) {
        for (int i = 0; i < 3; i++) {
          add(g, servers, handler, ds);
        }
      }
      // the load
      AtomicLong produced = new AtomicLong();
      Thread producerThread = new Thread(() -> {
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(KafkaTransport.idempotent(
            Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers)))) {
          long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
          long n = 0;
          long t0 = System.nanoTime();
          while (System.nanoTime() < end) {
            String id = "rec-" + n;
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(TOPIC, id.getBytes(StandardCharsets.UTF_8),
                ("{\"n\":" + n + "}").getBytes(StandardCharsets.UTF_8));
            r.headers().add(KafkaTransport.ID_HEADER, id.getBytes(StandardCharsets.UTF_8));
            p.send(r).get();
            n++;
            produced.set(n);
            long due = t0 + n * 1_000_000_000L / rate;
            long wait = due - System.nanoTime();
            if (wait > 0) {
              Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
          }
        } catch (Exception e) {
          System.err.println("producer failed: " + e);
        }
      }, "producer");
      producerThread.start();
      Random random = new Random(42);
      while (producerThread.isAlive()) {
        Thread.sleep(killEvery * 1000L);
        if (!producerThread.isAlive()) {
          break;
        }
        int victim = random.nextInt(3);
        for (Group g : groups) { // the same fault in both groups
          List<Member> alive = new ArrayList<>();
          for (Member m : g.members) {
            if (m.thread.isAlive()) {
              alive.add(m);
            }
          }
          if (!alive.isEmpty()) {
            alive.get(victim % alive.size()).killAfterNextCommit = true;
          }
          add(g, servers, handler, ds);
        }
      }
      producerThread.join();
      long total = produced.get();
      // drain: wait until both groups have every record's effect, or 60 s
      long drainEnd = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (System.nanoTime() < drainEnd && (distinct(ds, "naive") < total || distinct(ds, "protected") < total)) {
        Thread.sleep(200);
      }
      Thread.sleep(2000);
      for (Group g : groups) {
        for (Member m : g.members) {
          m.stop = true;
        }
        for (Member m : g.members) {
          m.thread.join(10_000);
        }
      }
      StringBuilder md = new StringBuilder();
      md.append(String.format(Locale.ROOT, "started %s; %d s of load at %d records/s into 6 partitions, %,d records; "
          + "3 members per group at the start, every %d s one member killed (after a database commit, before its offset "
          + "commit) and one added, in both groups (each kill and each addition a rebalance)%n%n",
          started.truncatedTo(ChronoUnit.SECONDS), seconds, rate, total, killEvery));
      md.append("| group | members killed | members added | records | handled (with redeliveries) | records with one effect "
          + "| duplicated | lost |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
      for (Group g : groups) {
        long[] counts = counts(ds, g.name, total);
        md.append(String.format(Locale.ROOT, "| %s | %d | %d | %,d | %,d | %,d | %,d | %,d |%n", g.name, g.kills.get(),
            g.members.size() - 3, total, g.handled.get(), counts[0], counts[1], counts[2]));
      }
      System.out.print(md);
    } finally {
      try (Connection admin = DriverManager.getConnection(postgresUrl); Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + pgName + " WITH (FORCE)");
      }
      cluster.close();
    }
  }

  private static void add(Group g, String servers, KafkaRecordHandler handler, HikariDataSource ds) {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, TOPIC + "-" + g.name);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
    // a killed member's partitions move once the broker misses its heartbeats for 6 s, as for a killed process
    c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
    c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
    Member m = new Member(g, c, handler, ds);
    g.members.add(m);
    m.thread = new Thread(m, g.name + "-" + g.members.size());
    m.thread.setDaemon(true);
    m.thread.start();
  }

  private static long distinct(HikariDataSource ds, String variant) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT COUNT(DISTINCT id) FROM fault_effects WHERE variant = ?")) {
      ps.setString(1, variant);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** @return records with exactly one effect, records with more, records with none */
  private static long[] counts(HikariDataSource ds, String variant, long total) throws SQLException {
    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT SUM(CASE WHEN n = 1 THEN 1 ELSE 0 END), SUM(CASE WHEN n > 1 THEN 1 ELSE 0 END), COUNT(*) "
            + "FROM (SELECT id, COUNT(*) AS n FROM fault_effects WHERE variant = ? GROUP BY id) t")) {
      ps.setString(1, variant);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new long[] {rs.getLong(1), rs.getLong(2), total - rs.getLong(3)};
      }
    }
  }
}
