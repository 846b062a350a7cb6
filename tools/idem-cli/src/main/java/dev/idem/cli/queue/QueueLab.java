package dev.idem.cli.queue;

import static dev.idem.cli.queue.LabBroker.NAIVE;
import static dev.idem.cli.queue.LabBroker.PROTECTED;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.Lab;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxEntry;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.IntentTransport;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The queue lab: three crashes on a real broker, each run once {@value LabBroker#NAIVE} and once
 * {@value LabBroker#PROTECTED}, with the effects counted in the database afterwards. Every crash is
 * a child JVM ({@link QueueLabChild}) killed with SIGKILL at the point the scenario names, which it
 * announces on its standard output.
 *
 * <ol>
 *   <li>{@value #CONSUMER_CRASH}: a consumer takes a message, commits its effect and is killed
 *       before its ack; the broker redelivers it to a new consumer. Naive: the effect again.
 *       Protected ({@link IdempotentConsumer}): the redelivery replays and is acked.
 *   <li>{@value #RELAY_CRASH}: an {@link OutboxRelay} publishes an intent (confirmed) and is killed
 *       before it marks it sent; after the lease another relay publishes it again with the same id.
 *       RabbitMQ and Kafka hold two copies (Kafka's idempotent producer dedupes its own retries,
 *       not a second publish), JetStream one ({@code Nats-Msg-Id}). A naive consumer and a
 *       protected one each read the copies.
 *   <li>{@value #SEND_BEFORE_COMMIT}: a request (an order, under an idempotency key) is killed
 *       before its commit, and the caller retries it with the same key. Naive: it published the
 *       message inside the request, so the killed attempt's message is out and the retry sends a
 *       second. Protected: the message is an outbox intent, rolled back with the killed attempt,
 *       recorded again by the retry and sent once by the relay.
 * </ol>
 *
 * <p>The lab drops and recreates its tables ({@value LabDatabase#EFFECTS_TABLE}, {@value
 * #KEYS_TABLE}, {@value #OUTBOX_TABLE}) and declares its own exchanges and queues, or streams,
 * named {@code idem.lab.<run>.*}, deleted at the end. Not thread-safe; one run at a time per
 * database.
 */
public final class QueueLab {

  /** The key table of the lab's Idem instance. */
  static final String KEYS_TABLE = "idem_qlab_keys";
  /** The lab's outbox table. */
  static final String OUTBOX_TABLE = "idem_qlab_outbox";
  /** Scenario 1. */
  static final String CONSUMER_CRASH = "consumer-crash";
  /** Scenario 2. */
  static final String RELAY_CRASH = "relay-crash";
  /** Scenario 3. */
  static final String SEND_BEFORE_COMMIT = "send-before-commit";
  /** The relays' lease: after it, a killed relay's intents go to another. */
  static final Duration RELAY_LEASE = Duration.ofSeconds(2);
  /** The body of every message and request. */
  static final byte[] ORDER = "{\"order\":42}".getBytes(StandardCharsets.UTF_8);

  private static final Duration CHILD_WAIT = Duration.ofSeconds(90);
  private static final Duration CONSUME_WAIT = Duration.ofSeconds(30);

  /**
   * One row of the table.
   *
   * @param scenario the scenario
   * @param variant naive or protected
   * @param killed which process was killed, and where
   * @param published messages the sending side published (and the broker confirmed)
   * @param stored copies the broker stored for the consumers
   * @param deliveries deliveries to consumers, the killed one included; {@code -1} when no consumer runs
   * @param effects effect rows counted in the database afterwards
   * @param verdict {@code ok}, or what went wrong
   * @param ok whether the row shows what it should
   */
  public record Row(String scenario, String variant, String killed, int published, long stored, int deliveries,
      long effects, String verdict, boolean ok) {}

  /**
   * @param broker product and version
   * @param brokerUrl the broker's URL, password masked
   * @param database product and version
   * @param url the JDBC URL, password masked
   * @param rows the rows, in run order
   */
  public record Report(String broker, String brokerUrl, String database, String url, List<Row> rows) {
    /** @return whether every protected row is ok */
    public boolean protectedOk() {
      return rows.stream().filter(r -> r.variant().equals(PROTECTED)).allMatch(Row::ok)
          && rows.stream().anyMatch(r -> r.variant().equals(PROTECTED));
    }
  }

  /** Something done before the commit; in the child it announces the point and waits to be killed. */
  @FunctionalInterface
  interface Hook {
    void run() throws Exception;
  }

  private final LabBroker broker;
  private final LabDatabase db;
  private final String run = UUID.randomUUID().toString().substring(0, 8);
  private final JdbcIdempotency idem;
  private final Outbox outbox = outbox();

  /**
   * @param broker a connected broker
   * @param db the database
   */
  QueueLab(LabBroker broker, LabDatabase db) {
    this.broker = Objects.requireNonNull(broker, "broker");
    this.db = Objects.requireNonNull(db, "db");
    this.idem = idem(db);
  }

  // ---- shared with the child processes ----

  static JdbcIdempotency idem(LabDatabase db) {
    return JdbcIdempotency.builder().table(KEYS_TABLE).dataSource(db).build();
  }

  static Outbox outbox() {
    return Outbox.builder().table(OUTBOX_TABLE).build();
  }

  /** The protected consumer of a scenario: key = the message id, scope = its name, one effect row. */
  static IdempotentConsumer consumer(LabDatabase db, String scenario) {
    return IdempotentConsumer.builder("idem-lab." + scenario, idem(db),
        (c, m) -> LabDatabase.insertEffect(c, scenario, PROTECTED, m.messageId())).build();
  }

  static OutboxRelay relay(Outbox outbox, LabDatabase db, IntentTransport transport) {
    return OutboxRelay.builder(outbox, db).transport(transport).lease(RELAY_LEASE).batchSize(10).build();
  }

  static IdempotentRequest order(String key) {
    return IdempotentRequest.ofJson("idem-lab", "POST /orders", key, ORDER);
  }

  /** The naive request of scenario 3: the order row, then the message published inside the request. */
  static Outcome orderSendingInside(JdbcIdempotency idem, LabBroker broker, String destination, String key, Hook beforeCommit) {
    return idem.execute(order(key), ctx -> {
      Connection c = ctx.connection();
      LabDatabase.insertEffect(c, SEND_BEFORE_COMMIT, NAIVE, key);
      broker.publish(destination, UUID.randomUUID().toString(), ORDER);
      beforeCommit.run();
      return StoredResponse.of(201, "{\"order\":42}");
    });
  }

  /** The protected request of scenario 3: the order row and an outbox intent, in one transaction. */
  static Outcome orderWithOutbox(JdbcIdempotency idem, Outbox outbox, LabBroker broker, String destination, String key,
      Hook beforeCommit) {
    IdempotentRequest request = order(key);
    return idem.execute(request, outbox.effect(request, (c, intents) -> {
      LabDatabase.insertEffect(c, SEND_BEFORE_COMMIT, PROTECTED, key);
      intents.add(broker.intent(destination, ORDER));
      beforeCommit.run();
      return StoredResponse.of(201, "{\"order\":42}");
    }));
  }

  // ---- the lab ----
  /** The broker or the database cannot be used: {@code idem lab --queue} exits with status 2. */
  public static final class Unusable extends Exception {
    Unusable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Connects to the broker and the database and runs the lab.
   *
   * @param broker {@code rabbitmq}, {@code jetstream} or {@code kafka}
   * @param brokerUrl the broker's URL, or {@code null} for {@code amqp://guest:guest@127.0.0.1:5672}
   *     (RabbitMQ), {@code nats://127.0.0.1:4222} (JetStream) or {@code 127.0.0.1:9092} (Kafka)
   * @param jdbcUrl the database's JDBC URL
   * @return the report
   * @throws Unusable if the broker cannot be reached or the lab's tables cannot be made
   * @throws IllegalArgumentException if {@code broker} is none of these
   */
  public static Report run(String broker, String brokerUrl, String jdbcUrl) throws Unusable {
    LabDatabase db = new LabDatabase(jdbcUrl);
    try (LabBroker b = LabBroker.connect(broker, brokerUrl)) {
      QueueLab lab = new QueueLab(b, db);
      try {
        lab.prepare();
      } catch (SQLException | RuntimeException e) {
        throw new Unusable("cannot use the database " + Lab.redact(jdbcUrl) + ": " + e.getMessage(), e);
      }
      return lab.run();
    } catch (LabBroker.Unavailable e) {
      throw new Unusable(e.getMessage(), e);
    }
  }


  private String database;

  /** Recreates the lab's tables. */
  void prepare() throws SQLException {
    database = db.describe();
    db.recreate(KEYS_TABLE, OUTBOX_TABLE);
    try (Connection c = db.getConnection()) {
      idem.createSchema(c);
      outbox.createSchema(c);
    }
  }

  /** Runs the three scenarios after {@link #prepare()}. */
  Report run() {
    List<Row> rows = new ArrayList<>();
    rows.addAll(guard(CONSUMER_CRASH, this::consumerCrash));
    rows.addAll(guard(RELAY_CRASH, this::relayCrash));
    rows.addAll(guard(SEND_BEFORE_COMMIT, this::sendBeforeCommit));
    return new Report(broker.describe(), Lab.redact(broker.url()), database, Lab.redact(db.url()), rows);
  }

  @FunctionalInterface
  private interface Scenario {
    List<Row> run() throws Exception;
  }

  private List<Row> guard(String scenario, Scenario s) {
    try {
      return s.run();
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      String verdict = "error: " + e.getMessage();
      return List.of(new Row(scenario, NAIVE, "-", 0, 0, -1, 0, verdict, false),
          new Row(scenario, PROTECTED, "-", 0, 0, -1, 0, verdict, false));
    }
  }

  private String destination(String name) throws Exception {
    String d = "idem.lab." + run + "." + name;
    broker.declare(d);
    return d;
  }

  private ChildJvm child(String role, String destination, String arg) throws Exception {
    return ChildJvm.start(List.of(role, broker.kind(), broker.url(), db.url(), destination, arg));
  }

  private List<Row> consumerCrash() throws Exception {
    String dest = destination("consumer");
    try {
      broker.publish(dest, UUID.randomUUID().toString(), ORDER); // a copy in each variant's queue
      long stored = broker.stored(dest);
      List<Row> rows = new ArrayList<>();
      for (String variant : List.of(NAIVE, PROTECTED)) {
        try (ChildJvm child = child("consumer-" + variant, dest, "-")) {
          child.await(QueueLabChild.COMMITTED, CHILD_WAIT);
          child.kill();
        }
        LabBroker.Consumption after = variant.equals(NAIVE)
            ? broker.consumeNaive(dest, m -> db.insertEffect(CONSUMER_CRASH, NAIVE, m.messageId()), 1, CONSUME_WAIT)
            : broker.consumeProtected(dest, consumer(db, CONSUMER_CRASH), 1, CONSUME_WAIT);
        int deliveries = 1 + after.deliveries();
        long effects = db.countEffects(CONSUMER_CRASH, variant);
        String fault = deliveries < 2 ? "the broker did not redeliver the message" : null;
        rows.add(row(CONSUMER_CRASH, variant, "consumer, after its commit, before its ack", 1, stored, deliveries,
            effects, fault, after.problems(), 1, 1));
      }
      return rows;
    } finally {
      broker.delete(dest);
    }
  }

  private List<Row> relayCrash() throws Exception {
    String dest = destination("relay");
    try {
      String key = UUID.randomUUID().toString();
      IdempotentRequest request = order(key);
      idem.execute(request, outbox.effect(request, (c, intents) -> {
        intents.add(broker.intent(dest, ORDER));
        return StoredResponse.of(201, "{\"order\":42}");
      }));
      int firstRelay;
      try (ChildJvm child = child("relay", dest, "-")) {
        String line = child.await(QueueLabChild.PUBLISHED, CHILD_WAIT);
        firstRelay = Integer.parseInt(line.substring(QueueLabChild.PUBLISHED.length()).trim());
        child.kill();
      }
      OutboxEntry.State afterKill;
      try (Connection c = db.getConnection()) {
        afterKill = outbox.intentsOf(c, request).get(0).state();
      }
      int secondRelay = 0;
      OutboxRelay relay = relay(outbox, db, broker.transport());
      long deadline = System.nanoTime() + CONSUME_WAIT.toNanos();
      while (secondRelay == 0 && System.nanoTime() < deadline) {
        secondRelay += relay.runOnce().sent();
        if (secondRelay == 0) {
          Thread.sleep(200); // the killed relay's lease has not ended yet
        }
      }
      int published = firstRelay + secondRelay;
      long stored = broker.stored(dest);
      String fault = firstRelay != 1 ? "the first relay did not publish"
          : afterKill != OutboxEntry.State.PENDING ? "the intent was " + afterKill + " after the kill, not PENDING"
          : secondRelay != 1 ? "no second relay published the intent again" : null;
      long expectedStored = broker.dedupesById() ? 1 : 2;
      List<Row> rows = new ArrayList<>();
      for (String variant : List.of(NAIVE, PROTECTED)) {
        LabBroker.Consumption c = variant.equals(NAIVE)
            ? broker.consumeNaive(dest, m -> db.insertEffect(RELAY_CRASH, NAIVE, m.messageId()), (int) stored, CONSUME_WAIT)
            : broker.consumeProtected(dest, consumer(db, RELAY_CRASH), (int) stored, CONSUME_WAIT);
        long effects = db.countEffects(RELAY_CRASH, variant);
        String f = fault == null && stored != expectedStored
            ? "the broker stored " + stored + " copies, expected " + expectedStored : fault;
        Row row = row(RELAY_CRASH, variant, "relay, after the publish, before marking it sent", published, stored,
            c.deliveries(), effects, f, c.problems(), 1, 1);
        if (row.ok() && variant.equals(NAIVE) && broker.dedupesById()) {
          row = new Row(row.scenario(), row.variant(), row.killed(), row.published(), row.stored(), row.deliveries(),
              row.effects(), "ok: the stream dropped the copy (Nats-Msg-Id)", true);
        }
        rows.add(row);
      }
      return rows;
    } finally {
      broker.delete(dest);
    }
  }

  private List<Row> sendBeforeCommit() throws Exception {
    List<Row> rows = new ArrayList<>();
    for (String variant : List.of(NAIVE, PROTECTED)) {
      String dest = destination("send-" + variant);
      try {
        String key = UUID.randomUUID().toString();
        boolean naive = variant.equals(NAIVE);
        int published = 0;
        try (ChildJvm child = child("request-" + variant, dest, key)) {
          child.await(naive ? QueueLabChild.SENT : QueueLabChild.RECORDED, CHILD_WAIT);
          child.kill();
        }
        if (naive) {
          published++; // the killed attempt's message was confirmed before it printed SENT
        }
        Outcome retry = naive
            ? orderSendingInside(idem, broker, dest, key, () -> { })
            : orderWithOutbox(idem, outbox, broker, dest, key, () -> { });
        if (naive) {
          published++;
        } else {
          published += relay(outbox, db, broker.transport()).drain().sent();
        }
        long stored = broker.stored(dest);
        long effects = db.countEffects(SEND_BEFORE_COMMIT, variant);
        String fault = retry.replayed() ? "the retry replayed: the killed attempt had committed" : null;
        rows.add(row(SEND_BEFORE_COMMIT, variant,
            naive ? "request, after sending, before its commit" : "request, after recording the intent, before its commit",
            published, stored, -1, effects, fault, List.of(), 1, 1));
      } finally {
        broker.delete(dest);
      }
    }
    return rows;
  }

  /**
   * @param fault why the crash did not happen as the scenario needs, or {@code null}
   * @param intendedEffects effects one operation should make
   * @param intendedMessages messages one operation should send (scenario 3 counts them)
   */
  private static Row row(String scenario, String variant, String killed, int published, long stored, int deliveries,
      long effects, String fault, List<String> problems, long intendedEffects, long intendedMessages) {
    String verdict;
    if (fault != null) {
      verdict = "not reproduced: " + fault;
    } else if (!problems.isEmpty()) {
      verdict = "error: " + problems.get(0);
    } else if (effects > intendedEffects) {
      verdict = "duplicate effect";
    } else if (effects < intendedEffects) {
      verdict = "missing effect";
    } else if (scenario.equals(SEND_BEFORE_COMMIT) && stored > intendedMessages) {
      verdict = "duplicate message";
    } else if (scenario.equals(SEND_BEFORE_COMMIT) && stored < intendedMessages) {
      verdict = "missing message";
    } else {
      verdict = "ok";
    }
    return new Row(scenario, variant, killed, published, stored, deliveries, effects, verdict, verdict.equals("ok"));
  }
}
