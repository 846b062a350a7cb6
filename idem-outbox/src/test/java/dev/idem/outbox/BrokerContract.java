package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.consumer.IdempotentConsumer;
import dev.idem.consumer.Verdict;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InMemoryLeaseStore;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.outbox.BrokerFixture.Received;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The outbox and the idempotent consumer on one database with one real broker. One small subclass
 * per database and broker; every test makes its own tables, queues or streams and removes them.
 */
abstract class BrokerContract {

  private static final Duration WAIT = Duration.ofSeconds(20);

  protected abstract JdbcTarget target();

  protected abstract BrokerFixture openBroker() throws Exception;

  private BrokerFixture broker;
  private String suffix;
  private DataSource ds;
  private Outbox outbox;
  private JdbcIdempotency idem;

  @BeforeEach
  void setUp() throws Exception {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10).toLowerCase(Locale.ROOT);
    ds = target().dataSource();
    broker = openBroker();
    outbox = Outbox.builder().table("ob_" + suffix).build();
    outbox.createSchema(ds);
    idem = JdbcIdempotency.builder().table("k_" + suffix).dataSource(ds).build();
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE fx_" + suffix + " (id VARCHAR(64) NOT NULL PRIMARY KEY, body VARCHAR(200))");
    }
  }

  @AfterEach
  void tearDown() throws Exception {
    try {
      if (broker != null) {
        broker.close();
      }
    } finally {
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        for (String t : List.of("ob_", "k_", "fx_", "ck_", "cl_")) {
          st.execute("DROP TABLE IF EXISTS " + t + suffix);
        }
      }
    }
  }

  private List<String> recordOrders(int operations, int intentsEach) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < operations; i++) {
      IdempotentRequest r = new IdempotentRequest(Scope.of("shop", "POST /orders"), IdempotencyKey.of("order-" + i),
          Fingerprint.ofBytes(new byte[] {(byte) i}));
      idem.execute(r, outbox.effect(r, (c, out) -> {
        for (int n = 0; n < intentsEach; n++) {
          ids.add(out.add(broker.intent(("{\"order\":\"" + r.key().value() + "\",\"n\":" + n + "}")
              .getBytes(StandardCharsets.UTF_8))));
        }
        return StoredResponse.of(201, "");
      }));
    }
    return ids;
  }

  private Map<OutboxEntry.State, Long> counts() throws SQLException {
    try (Connection c = ds.getConnection()) {
      return outbox.counts(c);
    }
  }

  /** Counts every intent a relay hands to the broker, and passes it on. */
  private static final class Counting implements IntentTransport {
    final IntentTransport target;
    final Map<String, AtomicInteger> handed = new ConcurrentHashMap<>();

    Counting(IntentTransport target) {
      this.target = target;
    }

    @Override
    public Intent.Kind kind() {
      return target.kind();
    }

    @Override
    public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
      batch.forEach(e -> handed.computeIfAbsent(e.id(), k -> new AtomicInteger()).incrementAndGet());
      return target.deliver(batch);
    }
  }

  @Test
  void theRelayPublishesEachIntentWithItsIdAsTheMessageId() throws Exception {
    List<String> ids = recordOrders(5, 2);
    OutboxRelay relay = OutboxRelay.builder(outbox, ds).transport(broker.transport()).build();
    assertThat(relay.drain().sent()).isEqualTo(10);

    List<Received> got = broker.published(10, WAIT);
    assertThat(got).extracting(Received::id).containsExactlyInAnyOrderElementsOf(ids);
    assertThat(new String(got.get(0).body(), StandardCharsets.UTF_8)).startsWith("{\"order\":\"order-");
    assertThat(counts()).containsEntry(OutboxEntry.State.SENT, 10L);
  }

  @Test
  void anIntentThatNoQueueOrStreamTakesIsNotMarkedSentButEndsDeadWithTheReason() throws Exception {
    IdempotentRequest r = new IdempotentRequest(Scope.of("shop", "POST /orders"), IdempotencyKey.of("lost-1"),
        Fingerprint.ofBytes(new byte[0]));
    String[] id = new String[1];
    idem.execute(r, outbox.effect(r, (c, out) -> {
      id[0] = out.add(broker.unroutableIntent("{}".getBytes(StandardCharsets.UTF_8)));
      return StoredResponse.of(201, "");
    }));
    OutboxRelay relay = OutboxRelay.builder(outbox, ds).transport(broker.transport())
        .maxAttempts(2).backoff(Duration.ZERO, Duration.ZERO).build();
    OutboxRelay.Round total = relay.drain();
    assertThat(total.sent()).isZero();
    assertThat(total.dead()).isEqualTo(1);
    try (Connection c = ds.getConnection()) {
      OutboxEntry dead = outbox.find(c, id[0]).orElseThrow();
      assertThat(dead.state()).isEqualTo(OutboxEntry.State.DEAD);
      assertThat(dead.lastError()).startsWith("gave up after 2 attempts; last: ");
      if (dead.intent().kind() == Intent.Kind.RABBITMQ) {
        assertThat(dead.lastError()).contains("unroutable: NO_ROUTE (312)");
      }
    }
  }

  @Test
  void concurrentRelaysDeliverEachIntentOncePerRound() throws Exception {
    List<String> ids = recordOrders(30, 2);
    Counting counting = new Counting(broker.transport());
    int relays = 4;
    CyclicBarrier start = new CyclicBarrier(relays);
    ExecutorService pool = Executors.newFixedThreadPool(relays);
    try {
      List<Future<Integer>> sent = new ArrayList<>();
      for (int i = 0; i < relays; i++) {
        OutboxRelay relay = OutboxRelay.builder(outbox, ds).transport(counting).batchSize(7)
            .lease(Duration.ofMinutes(5)).build();
        sent.add(pool.submit(() -> {
          start.await();
          return relay.drain().sent();
        }));
      }
      int total = 0;
      for (Future<Integer> f : sent) {
        total += f.get(2, TimeUnit.MINUTES);
      }
      assertThat(total).isEqualTo(60);
    } finally {
      pool.shutdownNow();
    }
    assertThat(counting.handed.keySet()).containsExactlyInAnyOrderElementsOf(ids);
    assertThat(counting.handed.values()).extracting(AtomicInteger::get).containsOnly(1);
    List<Received> got = broker.published(60, WAIT);
    assertThat(got).hasSize(60);
    assertThat(got).extracting(Received::id).doesNotHaveDuplicates();
  }

  /** Stands for a relay process that dies in the middle of a batch. */
  static final class RelayKilled extends Error {
    RelayKilled() {
      super("relay killed mid-batch");
    }
  }

  @Test
  void aRelayKilledMidBatchLosesNothing() throws Exception {
    List<String> ids = recordOrders(4, 2);
    IntentTransport real = broker.transport();
    IntentTransport dying = new IntentTransport() {
      @Override
      public Intent.Kind kind() {
        return real.kind();
      }

      @Override
      public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
        real.deliver(batch.subList(0, batch.size() / 2)); // published, never marked
        throw new RelayKilled();
      }
    };
    OutboxRelay first = OutboxRelay.builder(outbox, ds).transport(dying).lease(Duration.ofSeconds(1)).build();
    assertThatThrownBy(first::runOnce).isInstanceOf(RelayKilled.class);
    assertThat(counts()).containsEntry(OutboxEntry.State.PENDING, 8L);

    OutboxRelay second = OutboxRelay.builder(outbox, ds).transport(broker.transport()).build();
    Thread.sleep(1300);
    assertThat(second.drain().sent()).isEqualTo(8);
    assertThat(counts()).containsEntry(OutboxEntry.State.SENT, 8L);

    List<Received> got = broker.published(broker.dedupesById() ? 8 : 12, WAIT);
    assertThat(got.stream().map(Received::id).collect(Collectors.toSet())).containsExactlyInAnyOrderElementsOf(ids);
    // the first half went out twice, with the same ids; JetStream's duplicate window keeps one copy
    assertThat(got).hasSize(broker.dedupesById() ? 8 : 12);
  }

  private IdempotentConsumer consumer(AtomicInteger runs, int maxDeliveries) {
    return consumer(ds, runs, maxDeliveries);
  }

  private IdempotentConsumer consumer(DataSource keysDataSource, AtomicInteger runs, int maxDeliveries) {
    return consumer(keysDataSource, runs, maxDeliveries, TraceContextPropagation.NONE);
  }

  private IdempotentConsumer consumer(DataSource keysDataSource, AtomicInteger runs, int maxDeliveries,
      TraceContextPropagation tracing) {
    JdbcIdempotency keys = JdbcIdempotency.builder().table("ck_" + suffix).dataSource(keysDataSource).build();
    return IdempotentConsumer.builder("billing-" + suffix, keys, (c, m) -> {
      runs.incrementAndGet();
      String body = new String(m.body(), StandardCharsets.UTF_8);
      if (body.startsWith("poison")) {
        throw new IllegalStateException("cannot bill '" + body + "'");
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO fx_" + suffix + " (id, body) VALUES (?, ?)")) {
        ps.setString(1, UUID.randomUUID().toString());
        ps.setString(2, body);
        ps.executeUpdate();
      }
    }).maxDeliveries(maxDeliveries).tracing(tracing).build();
  }

  private long effects(String body) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM fx_" + suffix + " WHERE body = ?")) {
      ps.setString(1, body);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static void await(String what, Check check) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!check.done()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(50);
    }
  }

  /** Collects the verdicts a consumer acted on. Thread-safe. */
  private static final class Verdicts implements Consumer<Verdict> {
    final List<Verdict> all = new CopyOnWriteArrayList<>();

    @Override
    public void accept(Verdict v) {
      all.add(v);
    }

    long count(Verdict.Action action) {
      return all.stream().filter(v -> v.action() == action).count();
    }
  }

  @FunctionalInterface
  private interface Check {
    boolean done() throws Exception;
  }

  @Test
  void aRedeliveryAfterCommitBeforeAckRunsNothingAndIsAcked() throws Exception {
    broker.publishRaw("invoice-1", "bill-1".getBytes(StandardCharsets.UTF_8));
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer consumer = consumer(runs, 5);

    broker.processThenCrashBeforeAck(consumer);
    assertThat(effects("bill-1")).isEqualTo(1);

    Verdicts verdicts = new Verdicts();
    try (AutoCloseable running = broker.consume(consumer, verdicts)) {
      await("the redelivery to be acknowledged", () -> verdicts.count(Verdict.Action.ACK) == 1);
    }
    assertThat(verdicts.all).singleElement().satisfies(v -> assertThat(v.outcome().replayed()).isTrue());
    assertThat(broker.outstanding()).isZero();
    assertThat(effects("bill-1")).isEqualTo(1);
    assertThat(runs.get()).isEqualTo(1);
    assertThat(broker.deadLetters(0, Duration.ZERO)).isEmpty();
  }

  @Test
  void aPoisonMessageEndsDeadLetteredWithTheReason() throws Exception {
    broker.publishRaw("invoice-2", "poison-2".getBytes(StandardCharsets.UTF_8));
    broker.publishRaw("invoice-3", "bill-3".getBytes(StandardCharsets.UTF_8));
    AtomicInteger runs = new AtomicInteger();
    List<Received> dead;
    Verdicts verdicts = new Verdicts();
    try (AutoCloseable running = broker.consume(consumer(runs, 3), verdicts)) {
      await("a dead letter and an ack", () -> verdicts.count(Verdict.Action.DEAD_LETTER) == 1
          && verdicts.count(Verdict.Action.ACK) == 1);
    }
    dead = broker.deadLetters(1, WAIT);
    assertThat(verdicts.count(Verdict.Action.RETRY)).isEqualTo(2);
    assertThat(effects("bill-3")).isEqualTo(1);
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).id()).isEqualTo("invoice-2");
    assertThat(new String(dead.get(0).body(), StandardCharsets.UTF_8)).isEqualTo("poison-2");
    assertThat(dead.get(0).headers().get(broker.reasonHeader()))
        .contains("failed on delivery 3 of at most 3")
        .contains("cannot bill 'poison-2'");
    assertThat(runs.get()).isEqualTo(3 + 1);
    assertThat(effects("poison-2")).isZero();
    assertThat(broker.outstanding()).isZero();
  }

  /**
   * Regression: with the key table unavailable for longer than maxDeliveries deliveries, every
   * message was dead-lettered ("failed on delivery 5 of at most 5: ... IdemStoreException: ...
   * lookup failed"). A store failure is not the message's: it is retried after a backoff, not
   * counted, and once the store is back each message is handled once.
   */
  @Test
  void aKeyTableOutageLongerThanMaxDeliveriesDeadLettersNothing() throws Exception {
    for (int i = 5; i <= 7; i++) {
      broker.publishRaw("invoice-" + i, ("bill-" + i).getBytes(StandardCharsets.UTF_8));
    }
    OutageDataSource flaky = new OutageDataSource(ds);
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer consumer = consumer(flaky, runs, 2);
    // the key table exists before the outage (the consumer's first message makes it)
    assertThat(consumer.process(new dev.idem.consumer.InboundMessage("warm-up", Map.of(), "warm-up".getBytes(StandardCharsets.UTF_8), 1,
        "test")).action()).isEqualTo(Verdict.Action.ACK);
    runs.set(0);
    Verdicts verdicts = new Verdicts();
    flaky.down(true);
    try (AutoCloseable running = broker.consume(consumer, verdicts)) {
      await("store failures past the bound of 2 deliveries", () -> verdicts.count(Verdict.Action.RETRY) >= 5
          || verdicts.count(Verdict.Action.DEAD_LETTER) > 0);
      assertThat(verdicts.count(Verdict.Action.DEAD_LETTER)).as("dead letters during the outage").isZero();
      flaky.down(false);
      await("every message acknowledged", () -> verdicts.count(Verdict.Action.ACK) == 3);
    }
    assertThat(flaky.refused()).isPositive();
    assertThat(verdicts.count(Verdict.Action.DEAD_LETTER)).isZero();
    assertThat(verdicts.all.stream().filter(v -> v.action() == Verdict.Action.RETRY))
        .allSatisfy(v -> {
          assertThat(v.storeUnavailable()).isTrue();
          assertThat(v.retryAfter()).isPositive();
        });
    assertThat(runs.get()).isEqualTo(3);
    for (int i = 5; i <= 7; i++) {
      assertThat(effects("bill-" + i)).isEqualTo(1);
    }
    assertThat(broker.outstanding()).isZero();
    assertThat(broker.deadLetters(0, Duration.ZERO)).isEmpty();
  }

  @Test
  void aMessageWithoutAnIdIsDeadLetteredNotRunUnprotected() throws Exception {
    broker.publishRaw(null, "bill-4".getBytes(StandardCharsets.UTF_8));
    AtomicInteger runs = new AtomicInteger();
    Verdicts verdicts = new Verdicts();
    try (AutoCloseable running = broker.consume(consumer(runs, 3), verdicts)) {
      await("a dead letter", () -> verdicts.count(Verdict.Action.DEAD_LETTER) == 1);
    }
    List<Received> dead = broker.deadLetters(1, WAIT);
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).headers().get(broker.reasonHeader())).contains("no idempotency key");
    assertThat(runs.get()).isZero();
  }

  @Test
  void anIntentPublishedTwiceByRelaysMakesOneEffectAtTheConsumer() throws Exception {
    List<String> ids = recordOrders(3, 1);
    IntentTransport real = broker.transport();
    // A relay that publishes and dies before marking: the next relay publishes the same intents again.
    IntentTransport dying = new IntentTransport() {
      @Override
      public Intent.Kind kind() {
        return real.kind();
      }

      @Override
      public List<Delivery> deliver(List<OutboxEntry> batch) throws InterruptedException {
        real.deliver(batch);
        throw new RelayKilled();
      }
    };
    assertThatThrownBy(OutboxRelay.builder(outbox, ds).transport(dying).lease(Duration.ofMillis(500)).build()::runOnce)
        .isInstanceOf(RelayKilled.class);
    Thread.sleep(700);
    assertThat(OutboxRelay.builder(outbox, ds).transport(real).build().drain().sent()).isEqualTo(3);

    AtomicInteger runs = new AtomicInteger();
    Verdicts verdicts = new Verdicts();
    int copies = broker.dedupesById() ? 3 : 6;
    try (AutoCloseable running = broker.consume(consumer(runs, 3), verdicts)) {
      await(copies + " acknowledgements", () -> verdicts.count(Verdict.Action.ACK) == copies);
    }
    assertThat(verdicts.all.stream().filter(v -> v.outcome().replayed()).count()).isEqualTo(copies - 3);
    for (int i = 0; i < 3; i++) {
      assertThat(effects("{\"order\":\"order-" + i + "\",\"n\":0}")).isEqualTo(1);
    }
    assertThat(runs.get()).isEqualTo(3);
    assertThat(broker.outstanding()).isZero();
    Set<String> unique = new HashSet<>(ids);
    assertThat(unique).hasSize(3);
  }

  @Test
  void theConsumerHandlesAMessageInTheTraceOfTheRequestThatWroteItsIntent() throws Exception {
    try (OpenTelemetryPropagation tracing = new OpenTelemetryPropagation()) {
      Outbox traced = Outbox.builder().table("ob_" + suffix).tracing(tracing).build();
      IdempotentRequest r = new IdempotentRequest(Scope.of("shop", "POST /orders"), IdempotencyKey.of("order-t"),
          Fingerprint.ofBytes(new byte[] {1}));
      Span request = tracing.tracer.spanBuilder("POST /orders").setSpanKind(SpanKind.SERVER).startSpan();
      try (io.opentelemetry.context.Scope ignored = request.makeCurrent()) {
        idem.execute(r, traced.effect(r, (c, out) -> {
          out.add(broker.intent("{\"order\":\"t\"}".getBytes(StandardCharsets.UTF_8)));
          return StoredResponse.of(201, "");
        }));
      } finally {
        request.end();
      }
      String traceId = request.getSpanContext().getTraceId();
      assertThat(OutboxRelay.builder(traced, ds).transport(broker.transport()).build().drain().sent()).isEqualTo(1);
      try (Connection c = ds.getConnection()) {
        assertThat(traced.intentsOf(c, r)).singleElement().satisfies(e -> assertThat(e.intent().headers())
            .contains(Map.entry("traceparent", "00-" + traceId + "-" + request.getSpanContext().getSpanId() + "-"
                + request.getSpanContext().getTraceFlags().asHex())));
      }
      // the relay sent it in a producer span of the request's trace, whose context the message carries
      SpanData publish = tracing.finished().stream().filter(s -> s.getName().startsWith("publish ")).collect(onlyOne());
      assertThat(publish.getTraceId()).isEqualTo(traceId);
      assertThat(publish.getParentSpanId()).isEqualTo(request.getSpanContext().getSpanId());
      assertThat(publish.getKind()).isEqualTo(SpanKind.PRODUCER);

      // the message that carries the context, and one published without any: a trace of its own
      broker.publishRaw("untraced-1", "untraced".getBytes(StandardCharsets.UTF_8));
      AtomicInteger runs = new AtomicInteger();
      Verdicts verdicts = new Verdicts();
      try (AutoCloseable running = broker.consume(consumer(ds, runs, 3, tracing), verdicts)) {
        await("two acknowledgements", () -> verdicts.count(Verdict.Action.ACK) == 2);
      }
      assertThat(runs.get()).isEqualTo(2);
      List<SpanData> consumed = tracing.finished().stream()
          .filter(s -> s.getName().equals("consume billing-" + suffix)).toList();
      assertThat(consumed).hasSize(2);
      assertThat(consumed).filteredOn(s -> s.getTraceId().equals(traceId)).singleElement().satisfies(s -> {
        assertThat(s.getParentSpanId()).as("the consumer's parent is the relay's publish span").isEqualTo(publish.getSpanId());
        assertThat(s.getKind()).isEqualTo(SpanKind.CONSUMER);
      });
      assertThat(consumed).filteredOn(s -> !s.getTraceId().equals(traceId)).singleElement()
          .satisfies(s -> assertThat(s.getParentSpanContext().isValid()).isFalse());
    }
  }

  private static java.util.stream.Collector<SpanData, ?, SpanData> onlyOne() {
    return java.util.stream.Collectors.collectingAndThen(java.util.stream.Collectors.toList(), list -> {
      assertThat(list).hasSize(1);
      return list.get(0);
    });
  }

  // ---- lease mode: handlers whose effect is outside the database ----

  /** The lease stores the lease-mode consumer tests run on. */
  enum Leases {
    IN_MEMORY,
    /** {@link JdbcLeaseStore} on this contract's database. */
    JDBC
  }

  private LeaseStore leaseStore(Leases kind) {
    return kind == Leases.IN_MEMORY
        ? new InMemoryLeaseStore()
        : JdbcLeaseStore.builder(ds).table("cl_" + suffix).createSchema(true).build();
  }

  /** The external effects a lease-mode handler made (a stand-in for a payment API or a mailer). */
  private final Map<String, AtomicInteger> sent = new ConcurrentHashMap<>();

  private IdempotentConsumer leaseConsumer(LeaseStore store, AtomicInteger runs, List<Boolean> recoveries, int maxDeliveries) {
    LeaseIdempotency leases = LeaseIdempotency.builder(store).lease(Duration.ofSeconds(30)).build();
    return IdempotentConsumer.leaseBuilder("mailer-" + suffix, leases, (context, m) -> {
      runs.incrementAndGet();
      recoveries.add(context.recovery());
      String body = new String(m.body(), StandardCharsets.UTF_8);
      if (body.startsWith("poison")) {
        throw new IllegalStateException("cannot mail '" + body + "'");
      }
      sent.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet();
    }).maxDeliveries(maxDeliveries).build();
  }

  private int sent(String body) {
    AtomicInteger n = sent.get(body);
    return n == null ? 0 : n.get();
  }

  @ParameterizedTest
  @EnumSource(Leases.class)
  void leaseModeRedeliveryOfACompletedMessageRunsNothingAndIsAcked(Leases kind) throws Exception {
    broker.publishRaw("mail-1", "hello-1".getBytes(StandardCharsets.UTF_8));
    AtomicInteger runs = new AtomicInteger();
    List<Boolean> recoveries = new CopyOnWriteArrayList<>();
    IdempotentConsumer consumer = leaseConsumer(leaseStore(kind), runs, recoveries, 5);
    assertThat(consumer.leaseMode()).isTrue();

    // completion stored, then the consumer dies before the ack: the broker redelivers
    broker.processThenCrashBeforeAck(consumer);
    assertThat(sent("hello-1")).isEqualTo(1);

    Verdicts verdicts = new Verdicts();
    try (AutoCloseable running = broker.consume(consumer, verdicts)) {
      await("the redelivery to be acknowledged", () -> verdicts.count(Verdict.Action.ACK) == 1);
    }
    assertThat(verdicts.all).singleElement().satisfies(v -> assertThat(v.outcome().replayed()).isTrue());
    assertThat(runs.get()).isEqualTo(1);
    assertThat(recoveries).containsExactly(false);
    assertThat(sent("hello-1")).isEqualTo(1);
    assertThat(broker.outstanding()).isZero();
    assertThat(broker.deadLetters(0, Duration.ZERO)).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(Leases.class)
  void leaseModeHandlerFailureReleasesTheClaimIsRedeliveredThenDeadLettered(Leases kind) throws Exception {
    broker.publishRaw("mail-2", "poison-2".getBytes(StandardCharsets.UTF_8));
    broker.publishRaw("mail-3", "hello-3".getBytes(StandardCharsets.UTF_8));
    AtomicInteger runs = new AtomicInteger();
    List<Boolean> recoveries = new CopyOnWriteArrayList<>();
    Verdicts verdicts = new Verdicts();
    try (AutoCloseable running = broker.consume(leaseConsumer(leaseStore(kind), runs, recoveries, 3), verdicts)) {
      await("a dead letter and an ack", () -> verdicts.count(Verdict.Action.DEAD_LETTER) == 1
          && verdicts.count(Verdict.Action.ACK) == 1);
    }
    List<Received> dead = broker.deadLetters(1, WAIT);
    // each redelivery ran the handler again: the failed run's claim was released, not left to expire
    assertThat(verdicts.count(Verdict.Action.RETRY)).isEqualTo(2);
    assertThat(runs.get()).isEqualTo(3 + 1);
    assertThat(recoveries).containsOnly(false);
    assertThat(sent("hello-3")).isEqualTo(1);
    assertThat(sent("poison-2")).isZero();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).id()).isEqualTo("mail-2");
    assertThat(dead.get(0).headers().get(broker.reasonHeader()))
        .contains("failed on delivery 3 of at most 3")
        .contains("cannot mail 'poison-2'");
    assertThat(broker.outstanding()).isZero();
  }

  @ParameterizedTest
  @EnumSource(Leases.class)
  void leaseModeRedeliveryThatTakesOverAnExpiredLeaseIsARecovery(Leases kind) throws Exception {
    byte[] body = "hello-4".getBytes(StandardCharsets.UTF_8);
    broker.publishRaw("mail-4", body);
    LeaseStore store = leaseStore(kind);
    // A consumer that claimed the message and died in its handler: its claim stays until the lease ends.
    IdempotentRequest request = new IdempotentRequest(Scope.of("mailer-" + suffix, IdempotentConsumer.OPERATION),
        IdempotencyKey.of("mail-4"), Fingerprint.ofBytes(body));
    ClaimResult crashed = store.claim(request, "crashed-consumer", Duration.ofSeconds(1), Duration.ofHours(1));
    assertThat(crashed.state()).isEqualTo(ClaimResult.State.CLAIMED);

    AtomicInteger runs = new AtomicInteger();
    List<Boolean> recoveries = new CopyOnWriteArrayList<>();
    Verdicts verdicts = new Verdicts();
    // maxDeliveries 2: deliveries refused while the dead consumer's lease lives must not dead-letter the message
    try (AutoCloseable running = broker.consume(leaseConsumer(store, runs, recoveries, 2), verdicts)) {
      await("the recovery to be acknowledged", () -> verdicts.count(Verdict.Action.ACK) == 1);
    }
    assertThat(verdicts.count(Verdict.Action.RETRY)).isPositive();
    assertThat(verdicts.all.stream().filter(v -> v.action() == Verdict.Action.RETRY))
        .allSatisfy(v -> assertThat(v.reason()).contains("being handled under another claim"));
    assertThat(verdicts.count(Verdict.Action.DEAD_LETTER)).isZero();
    Verdict acked = verdicts.all.get(verdicts.all.size() - 1);
    assertThat(acked.action()).isEqualTo(Verdict.Action.ACK);
    assertThat(acked.outcome().recovery()).isTrue();
    assertThat(runs.get()).isEqualTo(1);
    assertThat(recoveries).containsExactly(true);
    assertThat(sent("hello-4")).isEqualTo(1);
    assertThat(broker.outstanding()).isZero();
    assertThat(broker.deadLetters(0, Duration.ZERO)).isEmpty();
  }
}
