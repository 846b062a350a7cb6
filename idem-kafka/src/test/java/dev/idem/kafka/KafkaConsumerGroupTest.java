package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.outbox.Intent;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxRelay;
import dev.idem.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What only Kafka has: partitions shared by the members of a group, rebalances when members come
 * and go, per-poll commits, record keys that order an aggregate; on PostgreSQL and the in-process
 * broker.
 */
class KafkaConsumerGroupTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  private String suffix;
  private DataSource ds;
  private String topic;
  private final List<String> tables = new ArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10).toLowerCase(Locale.ROOT);
    ds = DB.target().dataSource();
    topic = KafkaBroker.uniqueTopic("idem-group");
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE fx_" + suffix + " (id VARCHAR(64) NOT NULL PRIMARY KEY, body VARCHAR(200))");
    }
    tables.add("fx_" + suffix);
    tables.add("k_" + suffix);
  }

  @AfterEach
  void tearDown() throws Exception {
    KafkaBroker.deleteTopics(List.of(topic));
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      for (String t : tables) {
        st.execute("DROP TABLE IF EXISTS " + t);
      }
    }
  }

  private Map<String, Object> consumerConfig(String group) {
    return Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaBroker.bootstrapServers(),
        ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "20",
        // A member whose poll loop stalls (twice in a full build, never alone: see the thread dump
        // this test prints when it times out) is taken out of the group after a minute, not five,
        // and a member that died without leaving after 10 s, not 45: the others take its partitions.
        ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "60000",
        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000",
        ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "3000");
  }

  private KafkaProducer<byte[], byte[]> producer() {
    return new KafkaProducer<>(KafkaTransport.idempotent(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
        KafkaBroker.bootstrapServers())));
  }

  /** A consumer that inserts one row per record, keyed by the record's id: a second effect fails the insert. */
  private IdempotentConsumer inserting(AtomicInteger runs) {
    JdbcIdempotency keys = JdbcIdempotency.builder().table("k_" + suffix).dataSource(ds).build();
    return IdempotentConsumer.builder("group-" + suffix, keys, (c, m) -> {
      runs.incrementAndGet();
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO fx_" + suffix + " (id, body) VALUES (?, ?)")) {
        ps.setString(1, m.header(KafkaTransport.ID_HEADER));
        ps.setString(2, new String(m.body(), StandardCharsets.UTF_8));
        ps.executeUpdate();
      }
    }).build();
  }

  private long rows() throws Exception {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(DISTINCT id) FROM fx_" + suffix)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** The message ids {@code msg-0} to {@code msg-(total-1)} that made no row. */
  private List<String> missing(int total) throws Exception {
    java.util.Set<String> seen = new java.util.HashSet<>();
    try (Connection c = ds.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT DISTINCT id FROM fx_" + suffix)) {
      while (rs.next()) {
        seen.add(rs.getString(1));
      }
    }
    List<String> missing = new java.util.ArrayList<>();
    for (int i = 0; i < total; i++) {
      if (!seen.contains("msg-" + i)) {
        missing.add("msg-" + i);
      }
    }
    return missing;
  }

  private static void await(String what, Duration wait, java.util.concurrent.Callable<Boolean> done) throws Exception {
    long deadline = System.nanoTime() + wait.toNanos();
    while (!done.call()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what + "\n" + memberThreads());
      }
      Thread.sleep(50);
    }
  }

  /** The stacks of the members' threads, for a time-out's message: where a stalled member waits. */
  private static String memberThreads() {
    StringBuilder out = new StringBuilder("member threads:");
    Thread.getAllStackTraces().forEach((thread, stack) -> {
      if (thread.getName().startsWith("idem-kafka-")) {
        out.append("\n  ").append(thread.getName()).append(' ').append(thread.getState());
        for (int i = 0; i < Math.min(stack.length, 25); i++) {
          out.append("\n    at ").append(stack[i]);
        }
      }
    });
    return out.toString();
  }

  @Test
  void membersAddedAndRemovedMidStreamShareThePartitionsAndEachRecordTakesEffectOnce() throws Exception {
    KafkaBroker.createTopics(4, topic);
    int total = 160;
    try (KafkaProducer<byte[], byte[]> producer = producer()) {
      List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent = new java.util.ArrayList<>();
      for (int i = 0; i < total; i++) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, ("k" + i).getBytes(StandardCharsets.UTF_8),
            ("body-" + i).getBytes(StandardCharsets.UTF_8));
        r.headers().add(KafkaTransport.ID_HEADER, ("msg-" + i).getBytes(StandardCharsets.UTF_8));
        sent.add(producer.send(r));
      }
      producer.flush();
      // The first sends to a broker that has just started may be refused (the stalls of this test in
      // full builds, where it runs first: one partition's first batch, about 22 records, never reached
      // the topic while every record that did took effect once). What is refused is sent again and
      // said; the test is about the consumers, and the topic must hold every record before they start.
      for (int i = 0; i < total; i++) {
        try {
          sent.get(i).get(60, java.util.concurrent.TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          System.err.println("[idem-kafka] the broker refused msg-" + i + " (" + e.getCause() + "); sent again");
          ProducerRecord<byte[], byte[]> again = new ProducerRecord<>(topic, ("k" + i).getBytes(StandardCharsets.UTF_8),
              ("body-" + i).getBytes(StandardCharsets.UTF_8));
          again.headers().add(KafkaTransport.ID_HEADER, ("msg-" + i).getBytes(StandardCharsets.UTF_8));
          try (KafkaProducer<byte[], byte[]> fresh = producer()) {
            fresh.send(again).get(60, java.util.concurrent.TimeUnit.SECONDS);
          }
        }
      }
    }
    assertThat(KafkaBroker.endOffsetsSum(topic)).as("records in the topic before any member starts").isEqualTo(total);
    AtomicInteger runs = new AtomicInteger();
    Map<Verdict.Action, AtomicInteger> verdicts = new ConcurrentHashMap<>();
    IdempotentConsumer consumer = inserting(runs);
    String group = "g-" + suffix;
    KafkaIdempotentConsumer first = KafkaIdempotentConsumer.builder(consumerConfig(group), List.of(topic), consumer)
        .concurrency(2).commit(KafkaIdempotentConsumer.Commit.POLL)
        .onVerdict((m, v) -> verdicts.computeIfAbsent(v.action(), k -> new AtomicInteger()).incrementAndGet())
        .build().onError((what, e) -> System.err.println("[idem-kafka] first: " + what + ": " + e));
    KafkaIdempotentConsumer second = KafkaIdempotentConsumer.builder(consumerConfig(group), List.of(topic), consumer)
        .concurrency(2).commit(KafkaIdempotentConsumer.Commit.POLL)
        .onVerdict((m, v) -> verdicts.computeIfAbsent(v.action(), k -> new AtomicInteger()).incrementAndGet())
        .build().onError((what, e) -> System.err.println("[idem-kafka] second: " + what + ": " + e));
    first.start();
    await("the first members to handle some records", Duration.ofSeconds(30), () -> runs.get() >= 30);
    second.start(); // two members join: the group rebalances mid-stream
    await("the new members to be given partitions", Duration.ofSeconds(30),
        () -> second.assignments().stream().mapToInt(java.util.Collection::size).sum() > 0);
    first.close(); // two members leave: their partitions move to the others
    long[] lastReport = {System.nanoTime()};
    await("every record's effect", Duration.ofSeconds(150), () -> {
      long rows = rows();
      if (rows != total && System.nanoTime() - lastReport[0] > Duration.ofSeconds(10).toNanos()) {
        lastReport[0] = System.nanoTime(); // a stalled group says how far it got, every 10 s
        System.err.println("[idem-kafka] waiting: rows " + rows + " of " + total + ", runs " + runs + ", verdicts " + verdicts
            + ", second's assignments " + second.assignments() + ", missing " + missing(total) + ", group lag "
            + KafkaBroker.lag(group, topic) + " (0: the missing records' offsets were committed, so they were skipped;"
            + " more: they wait uncommitted, so the members do not fetch them)");
      }
      return rows == total;
    });
    await("the offsets to be committed", Duration.ofSeconds(30), () -> KafkaBroker.lag(group, topic) == 0);
    second.close();

    assertThat(rows()).isEqualTo(total);
    assertThat(runs.get()).isEqualTo(total); // a redelivered record replays: the handler never ran twice
    assertThat(verdicts.get(Verdict.Action.ACK).get()).isGreaterThanOrEqualTo(total);
    assertThat(verdicts).doesNotContainKey(Verdict.Action.DEAD_LETTER);
    assertThat(KafkaBroker.lag(group, topic)).isZero();
  }

  @Test
  void theRecordKeyCanBeTheIdAndARecordWithoutKeyIsHaltedNotRunUnprotected() throws Exception {
    KafkaBroker.createTopics(1, topic);
    try (KafkaProducer<byte[], byte[]> producer = producer()) {
      producer.send(new ProducerRecord<>(topic, "id-1".getBytes(StandardCharsets.UTF_8), "a".getBytes(StandardCharsets.UTF_8))).get();
      producer.send(new ProducerRecord<>(topic, "id-1".getBytes(StandardCharsets.UTF_8), "a".getBytes(StandardCharsets.UTF_8))).get();
      producer.send(new ProducerRecord<>(topic, null, "b".getBytes(StandardCharsets.UTF_8))).get();
      producer.send(new ProducerRecord<>(topic, "id-2".getBytes(StandardCharsets.UTF_8), "c".getBytes(StandardCharsets.UTF_8))).get();
      producer.flush();
    }
    AtomicInteger runs = new AtomicInteger();
    JdbcIdempotency keys = JdbcIdempotency.builder().table("k_" + suffix).dataSource(ds).build();
    IdempotentConsumer consumer = IdempotentConsumer.builder("keys-" + suffix, keys, (c, m) -> runs.incrementAndGet()).build();
    List<Verdict> verdicts = new java.util.concurrent.CopyOnWriteArrayList<>();
    String group = "g-" + suffix;
    try (KafkaIdempotentConsumer running = KafkaIdempotentConsumer.builder(consumerConfig(group), List.of(topic), consumer)
        .keySource(KafkaRecordHandler.KeySource.recordKey())
        .deadLetter(KafkaRecordHandler.DeadLetter.haltPartition())
        .onVerdict((m, v) -> verdicts.add(v)).build()) {
      running.start();
      await("the keyless record to be retried", Duration.ofSeconds(30),
          () -> verdicts.stream().filter(v -> v.action() == Verdict.Action.RETRY).count() >= 3);
    }
    // the first record ran, its copy with the same key replayed, the keyless one halts the partition
    assertThat(runs.get()).isEqualTo(1);
    assertThat(verdicts.get(0).action()).isEqualTo(Verdict.Action.ACK);
    assertThat(verdicts.get(1).outcome().replayed()).isTrue();
    assertThat(verdicts.subList(2, verdicts.size())).allSatisfy(v -> {
      assertThat(v.action()).isEqualTo(Verdict.Action.RETRY);
      assertThat(v.reason()).contains("partition halts").contains("no idempotency key");
    });
    assertThat(KafkaBroker.lag(group, topic)).isEqualTo(2); // the keyless record and the one behind it
  }

  @Test
  void intentsOfOneAggregateGoToOnePartitionInTheOrderRecorded() throws Exception {
    KafkaBroker.createTopics(3, topic);
    Outbox outbox = Outbox.builder().table("ob_" + suffix).build();
    outbox.createSchema(ds);
    tables.add("ob_" + suffix);
    JdbcIdempotency idem = JdbcIdempotency.builder().table("k_" + suffix).dataSource(ds).build();
    for (int i = 0; i < 10; i++) {
      IdempotentRequest r = new IdempotentRequest(Scope.of("shop", "POST /orders/7/lines"), IdempotencyKey.of("line-" + i),
          Fingerprint.ofBytes(new byte[] {(byte) i}));
      int n = i;
      idem.execute(r, outbox.effect(r, (c, out) -> {
        out.add(Intent.kafka(topic, "order-7", ("line-" + n).getBytes(StandardCharsets.UTF_8)));
        out.add(Intent.kafka(topic, ("other-" + n).getBytes(StandardCharsets.UTF_8)));
        return StoredResponse.of(201, "");
      }));
    }
    try (KafkaTransport transport = new KafkaTransport(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
        KafkaBroker.bootstrapServers()))) {
      assertThat(OutboxRelay.builder(outbox, ds).transport(transport).batchSize(7).build().drain().sent()).isEqualTo(20);
    }
    Map<Integer, List<String>> byPartition = new HashMap<>();
    List<String> ids = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> reader = KafkaBroker.reader()) {
      reader.assign(KafkaBroker.partitions(reader, topic));
      reader.seekToBeginning(reader.assignment());
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (ids.size() < 20 && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : reader.poll(Duration.ofMillis(200))) {
          String body = new String(r.value(), StandardCharsets.UTF_8);
          String id = new String(r.headers().lastHeader(KafkaTransport.ID_HEADER).value(), StandardCharsets.UTF_8);
          ids.add(id);
          if (body.startsWith("line-")) {
            assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("order-7");
            byPartition.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(body);
          } else {
            assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo(id); // no key given: the intent id
          }
        }
      }
    }
    assertThat(ids).hasSize(20).doesNotHaveDuplicates();
    assertThat(byPartition).hasSize(1);
    assertThat(byPartition.values().iterator().next())
        .containsExactly("line-0", "line-1", "line-2", "line-3", "line-4", "line-5", "line-6", "line-7", "line-8", "line-9");
  }

  @Test
  void settingsThatWouldCommitBeforeTheEffectOrDuplicateAtTheProducerAreRefused() {
    IdempotentConsumer consumer = IdempotentConsumer.builder("refusals", JdbcIdempotency.builder().dataSource(ds).build(),
        (c, m) -> { }).build();
    assertThatThrownBy(() -> KafkaIdempotentConsumer.builder(Map.of("bootstrap.servers", "x:1", "group.id", "g",
        "enable.auto.commit", "true"), List.of("t"), consumer))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("enable.auto.commit=true");
    assertThatThrownBy(() -> KafkaIdempotentConsumer.builder(Map.of("bootstrap.servers", "x:1"), List.of("t"), consumer))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("group.id");
    assertThatThrownBy(() -> KafkaTransport.idempotent(Map.of("bootstrap.servers", "x:1", "acks", "1")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("acks=1");
    assertThatThrownBy(() -> KafkaTransport.idempotent(Map.of("bootstrap.servers", "x:1", "enable.idempotence", "false")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("enable.idempotence=false");
    assertThatThrownBy(() -> Intent.kafka("no spaces", new byte[0]))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topic name");
    assertThat(KafkaTransport.idempotent(Map.of("bootstrap.servers", "x:1")))
        .containsEntry("enable.idempotence", "true").containsEntry("acks", "all");
  }

  @Test
  void revokedPartitionsForgetTheirDeliveryCounts() {
    IdempotentConsumer consumer = IdempotentConsumer.builder("counts", JdbcIdempotency.builder().dataSource(ds).build(),
        (c, m) -> { }).build();
    KafkaRecordHandler handler = new KafkaRecordHandler(consumer, KafkaRecordHandler.KeySource.idHeader(),
        KafkaRecordHandler.DeadLetter.haltPartition());
    List<Integer> counts = new ArrayList<>();
    handler.onVerdict((m, v) -> counts.add(m.deliveryCount()));
    ConsumerRecord<byte[], byte[]> keyless = new ConsumerRecord<>("t", 0, 5L, null, new byte[0]);
    handler.handle(keyless);
    handler.handle(keyless);
    handler.forget(List.of(new TopicPartition("t", 1)));
    handler.handle(keyless);
    handler.forget(List.of(new TopicPartition("t", 0)));
    handler.handle(keyless);
    assertThat(counts).containsExactly(1, 2, 3, 1);
  }
}
