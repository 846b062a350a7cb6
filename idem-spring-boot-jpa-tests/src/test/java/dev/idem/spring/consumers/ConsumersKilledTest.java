package dev.idem.spring.consumers;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.testkit.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * A Spring Boot service with a {@code @KafkaListener} (manual acknowledgement), a {@code
 * @KafkaListener} (automatic acknowledgement on Spring's default error handler) and a {@code
 * @RabbitListener}, protected as the docs say and writing through the {@code JdbcTemplate} bean,
 * JPA and a {@code @Transactional} service ({@link ConsumersApp}), run in JVMs of its own on
 * PostgreSQL, a KRaft broker this test starts and RabbitMQ at 127.0.0.1:5672. It is killed with -9
 * after a message's transaction committed and before its acknowledgement, once per listener, and
 * the key's database is taken away for 70 seconds while messages arrive. Counted with SQL: one row
 * per distinct message, none for a failing handler's, no dead letter but the poison's.
 *
 * <p>Runs from both Spring Boot lines' JPA test modules. Under {@code CI=true} a missing
 * PostgreSQL or RabbitMQ is a failure; elsewhere the class is skipped with a message.
 */
class ConsumersKilledTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  static final String RABBIT_HOST = "127.0.0.1";
  static final int RABBIT_PORT = 5672;
  static final List<String> CHANNELS = List.of("kafka-manual", "kafka-record", "rabbit-manual");
  /** How long the database stays away in the outage test; 70 s as in the report, shorter with -Didem.test.outage-seconds. */
  static final Duration OUTAGE = Duration.ofSeconds(Long.getLong("idem.test.outage-seconds", 70));

  static EmbeddedKafkaKraftBroker broker;
  static com.rabbitmq.client.Connection rabbit;

  @TempDir Path dir;

  private String topic;
  private String queue;
  private String tag;
  private Channel channel;
  private final List<Process> services = new ArrayList<>();
  private Path log;

  @BeforeAll
  static void brokers() throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost(RABBIT_HOST);
    f.setPort(RABBIT_PORT);
    f.setUsername("guest");
    f.setPassword("guest");
    f.setConnectionTimeout(5000);
    try {
      rabbit = f.newConnection("idem-consumers-killed-test");
    } catch (IOException | TimeoutException e) {
      String message = "RabbitMQ is not reachable at " + RABBIT_HOST + ":" + RABBIT_PORT + " (" + e + ")";
      if (TestDatabase.underCi()) {
        throw new IllegalStateException(message + "; under CI=true a missing service is a failure", e);
      }
      System.err.println("[idem-spring-boot-jpa-tests] SKIPPED: " + message);
      Assumptions.abort(message);
    }
    broker = new EmbeddedKafkaKraftBroker(1, 2);
    broker.brokerProperty("group.initial.rebalance.delay.ms", "0");
    broker.afterPropertiesSet();
  }

  @AfterAll
  static void stopBrokers() throws IOException {
    if (broker != null) {
      broker.destroy();
    }
    if (rabbit != null) {
      rabbit.close();
    }
  }

  @BeforeEach
  void names() throws Exception {
    tag = UUID.randomUUID().toString().substring(0, 8);
    String name = "idem-killed-" + tag;
    topic = name;
    queue = name + ".q";
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.getBrokersAsString()))) {
      admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1), new NewTopic(topic + ".record", 2, (short) 1),
          new NewTopic(topic + ".DLT", 1, (short) 1), new NewTopic(topic + ".record.DLT", 1, (short) 1))).all().get();
    }
    channel = rabbit.createChannel();
    channel.queueDeclare(queue, true, false, false, null); // classic: Idem counts the deliveries
    channel.queueDeclare(queue + ".dlq", true, false, false, null);
    try (Connection c = DriverManager.getConnection(DB.url()); Statement s = c.createStatement()) {
      s.executeUpdate("DROP TABLE IF EXISTS payments");
      s.executeUpdate("CREATE TABLE payments(id BIGSERIAL PRIMARY KEY, message_id VARCHAR(100) NOT NULL,"
          + " channel VARCHAR(40) NOT NULL, style VARCHAR(20) NOT NULL)");
    }
    log = dir.resolve("service.log");
  }

  @AfterEach
  void cleanUp() throws Exception {
    for (Process p : services) {
      p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }
    if (channel != null) {
      channel.queueDelete(queue);
      channel.queueDelete(queue + ".dlq");
      channel.close();
    }
  }

  /** Starts the service in a JVM of its own; {@code killAfter} names a message to stop at, or is empty. */
  private Process start(String killAfter) throws IOException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx384m", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"), ConsumersApp.class.getName(),
        "--spring.main.banner-mode=off", "--server.port=0", "--logging.level.root=WARN", "--logging.level.dev.idem=INFO",
        "--spring.datasource.url=" + DB.url(), "--spring.datasource.hikari.maximum-pool-size=6",
        "--spring.datasource.hikari.connection-timeout=3000",
        "--spring.jpa.hibernate.ddl-auto=none", "--spring.jpa.open-in-view=false", "--idem.principal=shared",
        "--spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
        "--spring.kafka.consumer.auto-offset-reset=earliest", "--spring.kafka.consumer.max-poll-records=10",
        "--spring.kafka.consumer.properties.session.timeout.ms=6000",
        "--spring.kafka.consumer.properties.heartbeat.interval.ms=1000",
        "--spring.kafka.listener.ack-mode=manual", "--spring.kafka.listener.poll-timeout=500ms",
        "--spring.rabbitmq.host=" + RABBIT_HOST, "--spring.rabbitmq.port=" + RABBIT_PORT,
        "--test.topic=" + topic, "--test.queue=" + queue, "--test.kill-after=" + killAfter));
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    services.add(p);
    return p;
  }

  private List<String> said() throws IOException {
    if (!Files.exists(log)) {
      return List.of();
    }
    return Files.readAllLines(log, StandardCharsets.UTF_8).stream().filter(l -> l.startsWith("IDEM-TEST "))
        .map(l -> l.substring("IDEM-TEST ".length())).toList();
  }

  private void await(Duration limit, BooleanSupplier condition, String what, Process service) throws Exception {
    long end = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (service != null && !service.isAlive()) {
        throw new AssertionError("the service ended (exit " + service.exitValue() + ") before " + what + "; its output:\n"
            + tail());
      }
      if (System.nanoTime() > end) {
        throw new AssertionError("not within " + limit.toSeconds() + " s: " + what + " (" + state() + "); the service's output:\n"
            + tail());
      }
      Thread.sleep(200);
    }
  }

  /** What the database and the dead letters hold, for a failure's message. */
  private String state() {
    StringBuilder b = new StringBuilder();
    for (String ch : CHANNELS) {
      Map<String, Integer> rows = rows(ch);
      b.append(ch).append(": ").append(rows.size()).append(" ids, ")
          .append(rows.values().stream().filter(c -> c > 1).count()).append(" with more than one row; ");
    }
    try {
      b.append("dead letters ").append(deadLetters());
    } catch (IOException | RuntimeException e) {
      b.append("dead letters unreadable: ").append(e);
    }
    return b.toString();
  }

  private String tail() throws IOException {
    List<String> lines = Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : List.of();
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 80), lines.size()));
  }

  /** Kills the service with -9 (SIGKILL) once it says that {@code id}'s transaction committed. */
  private void killAfterCommit(Process service, String channelName, String id) throws Exception {
    String line = "committed-not-acknowledged " + channelName + " " + id;
    await(Duration.ofSeconds(180), () -> quietly(() -> said().contains(line)), line, service);
    service.destroyForcibly(); // kill -9: no shutdown hook, no acknowledgement, no offset commit
    assertThat(service.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(service.exitValue()).as("killed by SIGKILL").isEqualTo(137);
  }

  private void publishKafka(String to, String id, String body) throws Exception {
    try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
        broker.getBrokersAsString(), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))) {
      ProducerRecord<String, String> r = new ProducerRecord<>(to, id, body);
      r.headers().add("message-id", id.getBytes(StandardCharsets.UTF_8));
      p.send(r).get();
    }
  }

  private void publishRabbit(String id, String body) throws IOException {
    channel.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(id).deliveryMode(2).build(),
        body.getBytes(StandardCharsets.UTF_8));
  }

  /** Messages {@code from..to-1} of a channel, the first {@code copies} of them published twice, and a poison if asked. */
  private void publish(String channelName, int from, int to, int copies, boolean poison) throws Exception {
    String prefix = prefix(channelName);
    List<String> ids = new ArrayList<>();
    for (int i = from; i < to; i++) {
      ids.add(prefix + i);
    }
    for (int i = from; i < from + copies; i++) {
      ids.add(prefix + i); // a copy: the relay published it twice
    }
    for (String id : ids) {
      String body = "{\"payment\":\"" + id + "\"}";
      switch (channelName) {
        case "kafka-manual" -> publishKafka(topic, id, body);
        case "kafka-record" -> publishKafka(topic + ".record", id, body);
        default -> publishRabbit(id, body);
      }
    }
    if (poison) {
      switch (channelName) {
        case "kafka-manual" -> publishKafka(topic, prefix + "poison", "poison");
        case "kafka-record" -> publishKafka(topic + ".record", prefix + "poison", "poison");
        default -> publishRabbit(prefix + "poison", "poison");
      }
    }
  }

  /**
   * The ids' prefix on a channel, with this test's tag: the tests share the database and the
   * consumers' names, so ids of one test's messages must not be another's (they would replay).
   */
  private String prefix(String channelName) {
    return switch (channelName) {
      case "kafka-manual" -> "k-";
      case "kafka-record" -> "r-";
      default -> "q-";
    } + tag + "-";
  }

  /** Rows per message id of a channel. */
  private Map<String, Integer> rows(String channelName) {
    Map<String, Integer> rows = new HashMap<>();
    try (Connection c = DriverManager.getConnection(DB.url()); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT message_id, COUNT(*) FROM payments WHERE channel = '" + channelName
            + "' AND message_id LIKE '" + prefix(channelName) + "%' GROUP BY message_id")) {
      while (rs.next()) {
        rows.put(rs.getString(1), rs.getInt(2));
      }
    } catch (SQLException e) {
      return Map.of(); // the database is away (the outage test)
    }
    return rows;
  }

  private static Map<String, Integer> styles() throws SQLException {
    Map<String, Integer> styles = new HashMap<>();
    try (Connection c = DriverManager.getConnection(DB.url()); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT channel || ' ' || style, COUNT(*) FROM payments GROUP BY channel, style")) {
      while (rs.next()) {
        styles.put(rs.getString(1), rs.getInt(2));
      }
    }
    return styles;
  }

  private List<String> kafkaDeadLetters(String dlt) {
    List<String> ids = new ArrayList<>();
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
        broker.getBrokersAsString(), ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class))) {
      TopicPartition tp = new TopicPartition(dlt, 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long end = c.endOffsets(List.of(tp)).get(tp);
      while (c.position(tp) < end) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          ids.add(new String(r.headers().lastHeader("message-id").value(), StandardCharsets.UTF_8));
        }
      }
    }
    return ids;
  }

  /** The ids in each channel's dead letters. */
  private Map<String, List<String>> deadLetters() throws IOException {
    List<String> rabbitIds = new ArrayList<>();
    com.rabbitmq.client.GetResponse r;
    List<Long> tags = new ArrayList<>();
    while ((r = channel.basicGet(queue + ".dlq", false)) != null) {
      rabbitIds.add(r.getProps().getMessageId());
      tags.add(r.getEnvelope().getDeliveryTag());
    }
    for (long tag : tags) {
      channel.basicNack(tag, false, true); // back to the queue: counting does not take them
    }
    return Map.of("kafka-manual", kafkaDeadLetters(topic + ".DLT"), "kafka-record", kafkaDeadLetters(topic + ".record.DLT"),
        "rabbit-manual", rabbitIds);
  }

  private static boolean quietly(ThrowingSupplier condition) {
    try {
      return condition.get();
    } catch (Exception e) {
      return false;
    }
  }

  interface ThrowingSupplier {
    boolean get() throws Exception;
  }

  private boolean allRows(int count) {
    return CHANNELS.stream().allMatch(ch -> rows(ch).keySet().stream().filter(id -> !id.endsWith("poison")).count() == count);
  }

  @Test
  void killedWithMinus9AfterTheCommitAndBeforeTheAcknowledgementEachListenerMakesOneRowPerMessage() throws Exception {
    int n = 60;
    publish("kafka-manual", 0, n, 10, true);
    killAfterCommit(start("kafka-manual:" + prefix("kafka-manual") + 30), "kafka-manual", prefix("kafka-manual") + 30);
    publish("kafka-record", 0, n, 10, true);
    killAfterCommit(start("kafka-record:" + prefix("kafka-record") + 30), "kafka-record", prefix("kafka-record") + 30);
    publish("rabbit-manual", 0, n, 10, true);
    killAfterCommit(start("rabbit-manual:" + prefix("rabbit-manual") + 30), "rabbit-manual", prefix("rabbit-manual") + 30);
    Process last = start("");
    await(Duration.ofSeconds(240), () -> allRows(n) && quietly(() -> deadLetters().values().stream().allMatch(d -> !d.isEmpty())),
        "every message's row and each poison's dead letter", last);

    for (String ch : CHANNELS) {
      Map<String, Integer> rows = rows(ch);
      assertThat(rows).as(ch + ": no row of the failing handler's (written, then rolled back)")
          .doesNotContainKey(prefix(ch) + "poison");
      assertThat(rows).as(ch + ": one row per distinct message").hasSize(n).allSatisfy((id, count) -> assertThat(count)
          .as(id).isEqualTo(1));
      List<String> lines = said();
      String killed = prefix(ch) + "30";
      assertThat(lines).as(ch + ": the message killed before its acknowledgement came again and was replayed")
          .contains("verdict " + ch + " " + killed + " ACK replayed=true store-unavailable=false");
      assertThat(lines.stream().filter(l -> l.startsWith("verdict " + ch + " ") && l.contains("ACK replayed=true")).count())
          .as(ch + ": redeliveries replayed (the 10 copies and what the kill left unacknowledged)").isGreaterThanOrEqualTo(11);
    }
    assertThat(deadLetters()).as("only the poisons are dead letters").isEqualTo(Map.of(
        "kafka-manual", List.of(prefix("kafka-manual") + "poison"), "kafka-record", List.of(prefix("kafka-record") + "poison"),
        "rabbit-manual", List.of(prefix("rabbit-manual") + "poison")));
    report("kill -9");
    Map<String, Integer> styles = styles();
    for (String ch : CHANNELS) {
      for (String style : List.of("jdbc-template", "jpa", "service")) {
        assertThat(styles.getOrDefault(ch + " " + style, 0)).as(ch + " through " + style).isPositive();
      }
    }
  }

  @Test
  void theDatabaseAwayForSeventySecondsDeadLettersNothingAndLosesNothing() throws Exception {
    Process service = start("");
    for (String ch : CHANNELS) {
      publish(ch, 0, 10, 0, false);
    }
    await(Duration.ofSeconds(120), () -> allRows(10), "the first messages handled", service);
    String database = databaseName(DB.url());
    try (Connection admin = DriverManager.getConnection(TestDatabase.DEFAULT_POSTGRES_URL); Statement s = admin.createStatement()) {
      try {
        s.execute("ALTER DATABASE " + database + " ALLOW_CONNECTIONS false");
        s.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + database + "'");
        for (String ch : CHANNELS) {
          publish(ch, 10, 30, 5, false);
        }
        Thread.sleep(OUTAGE.toMillis());
      } finally {
        s.execute("ALTER DATABASE " + database + " ALLOW_CONNECTIONS true");
      }
    }
    await(Duration.ofSeconds(120), () -> allRows(30), "every message handled after the outage", service);

    for (String ch : CHANNELS) {
      assertThat(rows(ch)).as(ch + ": one row per distinct message").hasSize(30).allSatisfy((id, count) -> assertThat(count)
          .as(id).isEqualTo(1));
    }
    assertThat(deadLetters()).as("a store outage is not a poison message").isEqualTo(Map.of("kafka-manual", List.of(),
        "kafka-record", List.of(), "rabbit-manual", List.of()));
    report("database away for " + OUTAGE.toSeconds() + " s");
    List<String> lines = said();
    for (String ch : List.of("kafka-manual", "rabbit-manual")) {
      assertThat(lines).as(ch + " saw the store fail").anyMatch(l -> l.startsWith("verdict " + ch + " ")
          && l.endsWith("RETRY replayed=false store-unavailable=true"));
    }
    assertThat(lines).as("kafka-record asked its container to retry").anyMatch(l -> l.startsWith("retry kafka-record "));
  }

  /** One line for the report: rows, replays and store failures per channel. */
  private void report(String test) throws IOException, SQLException {
    List<String> lines = said();
    StringBuilder b = new StringBuilder("[ConsumersKilledTest] " + test + ":");
    for (String ch : CHANNELS) {
      Map<String, Integer> rows = rows(ch);
      b.append(' ').append(ch).append(' ').append(rows.size()).append(" ids, ")
          .append(rows.values().stream().mapToInt(Integer::intValue).sum()).append(" rows, ")
          .append(lines.stream().filter(l -> l.startsWith("verdict " + ch + " ") && l.contains("replayed=true")).count())
          .append(" replays, ")
          .append(lines.stream().filter(l -> (l.startsWith("verdict " + ch + " ") || l.startsWith("retry " + ch + " "))
              && (l.contains("store-unavailable=true") || l.contains("store failed"))).count())
          .append(" store-failure retries;");
    }
    b.append(" styles ").append(styles());
    System.out.println(b);
  }

  private static String databaseName(String url) {
    Matcher m = Pattern.compile("jdbc:postgresql://[^/]+/([A-Za-z0-9_]+)").matcher(url);
    if (!m.find()) {
      throw new IllegalStateException("no database name in " + url);
    }
    return m.group(1);
  }
}
