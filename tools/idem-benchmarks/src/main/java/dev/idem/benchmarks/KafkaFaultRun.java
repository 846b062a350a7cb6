package dev.idem.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.kafka.KafkaBrokerProcess;
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
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A fault run of the idempotent Kafka consumer: while a producer writes records at a steady rate
 * into a topic of 6 partitions, a group of members handles them, and under that load two kinds of
 * fault:
 *
 * <ul>
 *   <li><b>Members killed and added</b>: every few seconds one member is killed (it stops right
 *       after a record's database commit, before that offset's commit, and its client is dropped
 *       without committing: the partition's next owner polls the record again) and a new member is
 *       added (the group rebalances each time).
 *   <li><b>Broker restarts</b>: every few seconds more the broker, a one-node KRaft broker in a
 *       process of its own ({@code KafkaBrokerProcess} of idem-kafka's tests), is killed with
 *       SIGKILL and, a second later, started again in place (same port, same log directories).
 *       The producer (idempotence on, {@code acks=all}) retries across the outage; the members'
 *       polls come back empty and their commits fail or time out until it is back.
 * </ul>
 *
 * The same faults, at the same points, hit two groups side by side: <b>naive</b> (the INSERT, then
 * the offset commit) and <b>protected</b> ({@link KafkaRecordHandler}: the INSERT and the record's
 * idempotency key in one transaction, then the offset commit). A record counts as acknowledged
 * when the producer's {@code send} completed without error. Afterwards the topic is read back from
 * the start, and everything is counted with SQL in PostgreSQL: per group, records with more than
 * one effect (duplicated), acknowledged records that are not in the topic (lost by the broker)
 * and acknowledged records in the topic without an effect (lost by the consumer).
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package -pl tools/idem-benchmarks -am && java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.KafkaFaultRun 60 100 4 15
 * }</pre>
 *
 * Options (positional, all optional): seconds of load (default 60), records/s (default 100),
 * seconds between member kills (default 4), seconds between broker restarts (default 15; 0: none),
 * the PostgreSQL URL. The broker keeps Kafka's default flushing (no fsync per record): SIGKILL ends
 * the process, not the operating system, whose page cache keeps what the broker wrote; a machine
 * crash is not simulated here.
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
    final AtomicInteger failed = new AtomicInteger();
    final AtomicLong handled = new AtomicLong();
    final AtomicLong commitsFailed = new AtomicLong();

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
          ConsumerRecords<byte[], byte[]> records;
          try {
            records = client.poll(Duration.ofMillis(100));
          } catch (KafkaException e) {
            // the broker is down or restarting: poll again
            Thread.sleep(100);
            continue;
          }
          partitions:
          for (TopicPartition tp : records.partitions()) {
            for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
              if (group.protectedVariant) {
                Verdict v = handler.handle(r);
                if (v.action() == Verdict.Action.RETRY) {
                  // this partition's later records wait behind this one; the others go on
                  client.seek(tp, r.offset());
                  continue partitions;
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
              try {
                client.commitSync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)));
              } catch (CommitFailedException | RebalanceInProgressException | TimeoutException e) {
                // the partition moved (its next owner polls the record again), or the broker is
                // down (a later commit of the partition covers the record)
                group.commitsFailed.incrementAndGet();
              }
            }
          }
        }
        client.close(Duration.ofSeconds(5));
      } catch (Killed e) {
        group.kills.incrementAndGet();
        client.close(Duration.ZERO); // no commit: the record goes to the partition's next owner
      } catch (KafkaException | SQLException | InterruptedException e) {
        group.failed.incrementAndGet();
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
    System.exit(0); // the Kafka clients' and the pool's threads would keep the JVM up
  }

  private static void run(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 60;
    int rate = args.length > 1 ? Integer.parseInt(args[1]) : 100;
    int killEvery = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    int restartEvery = args.length > 3 ? Integer.parseInt(args[3]) : 15;
    String postgresUrl = args.length > 4 ? args[4] : "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";
    if (seconds < 1 || rate < 1 || killEvery < 1 || restartEvery < 0) {
      throw new IllegalArgumentException("seconds, records/s and seconds between kills must be positive, "
          + "seconds between restarts 0 or more");
    }
    Instant started = Instant.now();
    String pgName = "idem_fault_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (Connection admin = DriverManager.getConnection(postgresUrl); Statement st = admin.createStatement()) {
      st.execute("CREATE DATABASE " + pgName);
    }
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(SqlBackend.withDatabase(postgresUrl, pgName));
    hc.setMaximumPoolSize(10);
    try (KafkaBrokerProcess broker = KafkaBrokerProcess.start(Map.of());
        HikariDataSource ds = new HikariDataSource(hc);
        Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrapServers()))) {
      String servers = broker.bootstrapServers();
      admin.createTopics(List.of(new NewTopic(TOPIC, 6, (short) 1))).all().get(60, TimeUnit.SECONDS);
      JdbcIdempotency idem = JdbcIdempotency.builder().table("fault_keys").dataSource(ds).build();
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        idem.createSchema(c);
        st.execute("CREATE TABLE fault_effects (variant VARCHAR(16) NOT NULL, id VARCHAR(64) NOT NULL)");
        st.execute("CREATE TABLE fault_acked (id VARCHAR(64) NOT NULL PRIMARY KEY)");
        st.execute("CREATE TABLE fault_log (id VARCHAR(64) NOT NULL)");
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
      // the load: one record at a time, each acknowledged or failed before the next
      List<String> acked = java.util.Collections.synchronizedList(new ArrayList<>());
      AtomicLong sent = new AtomicLong();
      AtomicLong sendFailures = new AtomicLong();
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
            sent.incrementAndGet();
            try {
              p.send(r).get();
              acked.add(id);
            } catch (java.util.concurrent.ExecutionException e) {
              // not acknowledged (the delivery timed out): the record may or may not be in the log
              sendFailures.incrementAndGet();
            }
            n++;
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
      // the broker restarts: SIGKILL, a second's pause, a start in place
      List<Long> outagesMs = new CopyOnWriteArrayList<>();
      java.util.concurrent.atomic.AtomicReference<Exception> restartFailure = new java.util.concurrent.atomic.AtomicReference<>();
      Thread restarter = new Thread(() -> {
        try {
          while (restartEvery > 0) {
            // never interrupted: a restart under way when the load ends is finished, not cut short
            producerThread.join(restartEvery * 1000L);
            if (!producerThread.isAlive()) {
              return;
            }
            long down = System.nanoTime();
            broker.kill();
            Thread.sleep(1000);
            broker.restart();
            outagesMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - down));
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
          restartFailure.set(e);
        }
      }, "broker-restarts");
      producerThread.start();
      restarter.setDaemon(true);
      restarter.start();
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
      restarter.join();
      if (restartFailure.get() != null) {
        throw new IllegalStateException("a broker restart failed", restartFailure.get());
      }
      try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("INSERT INTO fault_acked (id) VALUES (?)")) {
        for (String id : List.copyOf(acked)) {
          ps.setString(1, id);
          ps.addBatch();
        }
        ps.executeBatch();
      }
      // drain: wait until both groups have every acknowledged record's effect, or 120 s
      long drainEnd = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (System.nanoTime() < drainEnd && (missing(ds, "naive") > 0 || missing(ds, "protected") > 0)) {
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
      long inLog = readLogBack(servers, ds);
      StringBuilder md = new StringBuilder();
      md.append(String.format(Locale.ROOT, "started %s; %d s of load at %d records/s into 6 partitions: %,d records sent, "
          + "%,d acknowledged, %,d sends failed, %,d records in the topic afterwards (%,d ids there more than once); "
          + "3 members per group at the start, every %d s one member killed (after a database commit, before its offset "
          + "commit) and one added, in both groups (each kill and each addition a rebalance); %s%n%n",
          started.truncatedTo(ChronoUnit.SECONDS), seconds, rate, sent.get(), acked.size(), sendFailures.get(), inLog,
          scalar(ds, "SELECT COUNT(*) FROM (SELECT id FROM fault_log GROUP BY id HAVING COUNT(*) > 1) t"), killEvery,
          restartEvery == 0 ? "no broker restarts" : String.format(Locale.ROOT,
              "every %d s the broker killed with SIGKILL and started again in place, %d times, each outage (kill to "
                  + "answering again) %s ms", restartEvery, outagesMs.size(), outagesMs)));
      md.append("| group | members killed | members added | broker restarts | acknowledged records | handled (with "
          + "redeliveries) | commits failed | records with one effect | duplicated | lost by the broker | lost by the "
          + "consumer |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      for (Group g : groups) {
        long[] counts = counts(ds, g.name);
        md.append(String.format(Locale.ROOT, "| %s | %d | %d | %d | %,d | %,d | %,d | %,d | %,d | %,d | %,d |%n", g.name,
            g.kills.get(), g.members.size() - 3, outagesMs.size(), acked.size(), g.handled.get(), g.commitsFailed.get(),
            counts[0], counts[1], counts[2], counts[3]));
      }
      for (Group g : groups) {
        if (g.failed.get() > 0) {
          md.append(String.format(Locale.ROOT, "%n%s: %d members stopped on an error (printed above)%n", g.name, g.failed.get()));
        }
      }
      System.out.print(md);
    } finally {
      try (Connection admin = DriverManager.getConnection(postgresUrl); Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + pgName + " WITH (FORCE)");
      }
    }
  }

  /** Reads the topic from its start into {@code fault_log}, one row per record. @return the records read */
  private static long readLogBack(String servers, HikariDataSource ds) throws SQLException {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    long read = 0;
    try (KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(c);
        Connection db = ds.getConnection(); PreparedStatement ps = db.prepareStatement("INSERT INTO fault_log (id) VALUES (?)")) {
      List<TopicPartition> partitions = new ArrayList<>();
      for (int p = 0; p < 6; p++) {
        partitions.add(new TopicPartition(TOPIC, p));
      }
      reader.assign(partitions);
      reader.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = reader.endOffsets(partitions, Duration.ofSeconds(30));
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (partitions.stream().anyMatch(tp -> reader.position(tp) < end.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the topic could not be read back to its end in 120 s");
        }
        for (ConsumerRecord<byte[], byte[]> r : reader.poll(Duration.ofMillis(500))) {
          ps.setString(1, id(r));
          ps.addBatch();
          read++;
        }
        ps.executeBatch();
      }
    }
    return read;
  }

  private static long scalar(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
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

  /** @return acknowledged records without an effect in the group yet */
  private static long missing(HikariDataSource ds, String variant) throws SQLException {
    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT COUNT(*) FROM fault_acked a WHERE NOT EXISTS (SELECT 1 FROM fault_effects e WHERE e.variant = ? AND e.id = a.id)")) {
      ps.setString(1, variant);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * @return acknowledged records with exactly one effect; records (acknowledged or not) with more
   *     than one; acknowledged records not in the topic (lost by the broker); acknowledged records
   *     in the topic with no effect (lost by the consumer)
   */
  private static long[] counts(HikariDataSource ds, String variant) throws SQLException {
    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
        "WITH e AS (SELECT id, COUNT(*) AS n FROM fault_effects WHERE variant = ? GROUP BY id), "
            + "l AS (SELECT DISTINCT id FROM fault_log) "
            + "SELECT (SELECT COUNT(*) FROM fault_acked a JOIN e ON e.id = a.id WHERE e.n = 1), "
            + "(SELECT COUNT(*) FROM e WHERE e.n > 1), "
            + "(SELECT COUNT(*) FROM fault_acked a WHERE NOT EXISTS (SELECT 1 FROM l WHERE l.id = a.id)), "
            + "(SELECT COUNT(*) FROM fault_acked a JOIN l ON l.id = a.id WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.id = a.id))")) {
      ps.setString(1, variant);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)};
      }
    }
  }
}
