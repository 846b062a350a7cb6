package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.outbox.spi.Delivery;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The outbox's contract on one database, without a broker: intents commit and roll back with the
 * effect and the key, a replay records nothing, ids are derived and guarded, and the relay's
 * claim, lease, backoff, dead state and retry by hand. One small subclass per database.
 */
abstract class OutboxStoreContract {

  protected abstract JdbcTarget target();

  private String suffix;
  private Outbox outbox;
  private JdbcIdempotency idem;
  private DataSource ds;

  @BeforeEach
  void setUp() throws SQLException {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10).toLowerCase(Locale.ROOT);
    ds = target().dataSource();
    outbox = Outbox.builder().table("ob_" + suffix).build();
    outbox.createSchema(ds);
    idem = JdbcIdempotency.builder().table("k_" + suffix).dataSource(ds).build();
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE fx_" + suffix + " (id VARCHAR(64) NOT NULL PRIMARY KEY)");
    }
  }

  @AfterEach
  void tearDown() throws SQLException {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      for (String t : List.of("ob_", "k_", "fx_")) {
        st.execute("DROP TABLE IF EXISTS " + t + suffix);
      }
    }
  }

  private static IdempotentRequest request(String principal, String key) {
    return new IdempotentRequest(Scope.of(principal, "POST /orders"), IdempotencyKey.of(key),
        Fingerprint.ofBytes("order".getBytes(StandardCharsets.UTF_8)));
  }

  private Outcome placeOrder(IdempotentRequest r, int intents) {
    return idem.execute(r, outbox.effect(r, (c, out) -> {
      try (Statement st = c.createStatement()) {
        st.execute("INSERT INTO fx_" + suffix + " (id) VALUES ('" + r.scope().principal() + "/" + r.key().value() + "')");
      }
      for (int i = 0; i < intents; i++) {
        out.add(Intent.rabbitMq("orders", "order.created", ("o" + i).getBytes(StandardCharsets.UTF_8)));
      }
      return StoredResponse.of(201, String.join(",", out.ids()));
    }));
  }

  private List<OutboxEntry> intentsOf(IdempotentRequest r) throws SQLException {
    try (Connection c = ds.getConnection()) {
      return outbox.intentsOf(c, r);
    }
  }

  private long count(String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement(); var rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private OutboxRelay.Builder relay(RecordingTransport transport) {
    return OutboxRelay.builder(outbox, ds).transport(transport).backoff(Duration.ZERO, Duration.ZERO);
  }

  @Test
  void intentsCommitWithTheEffectAndTheKeyWithIdsFromScopeKeyAndPosition() throws Exception {
    IdempotentRequest r = request("alice", "order-1");
    Outcome outcome = placeOrder(r, 3);

    List<OutboxEntry> rows = intentsOf(r);
    assertThat(rows).extracting(OutboxEntry::id).containsExactly(
        IntentId.of(r.scope(), r.key(), 0), IntentId.of(r.scope(), r.key(), 1), IntentId.of(r.scope(), r.key(), 2));
    assertThat(outcome.response().bodyAsString()).isEqualTo(String.join(",", rows.stream().map(OutboxEntry::id).toList()));
    assertThat(rows).allSatisfy(e -> {
      assertThat(e.state()).isEqualTo(OutboxEntry.State.PENDING);
      assertThat(e.attempts()).isZero();
      assertThat(e.intent().target()).isEqualTo("orders");
      assertThat(e.intent().route()).isEqualTo("order.created");
    });
    assertThat(rows.get(2).intent().body()).isEqualTo("o2".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aReplayRecordsNoSecondIntent() throws Exception {
    IdempotentRequest r = request("alice", "order-2");
    placeOrder(r, 2);
    Outcome again = placeOrder(r, 2);

    assertThat(again.replayed()).isTrue();
    assertThat(count("SELECT COUNT(*) FROM ob_" + suffix)).isEqualTo(2);
    assertThat(count("SELECT COUNT(*) FROM fx_" + suffix)).isEqualTo(1);
  }

  @Test
  void aFailedEffectLeavesNoIntent() throws Exception {
    IdempotentRequest r = request("alice", "order-3");
    assertThatThrownBy(() -> idem.execute(r, outbox.effect(r, (c, out) -> {
      out.add(Intent.jetStream("orders.created", new byte[] {1}));
      throw new IllegalStateException("payment declined");
    }))).hasMessageContaining("payment declined");
    assertThat(intentsOf(r)).isEmpty();

    // the retry runs the operation again and records the intent under the same id
    placeOrder(r, 1);
    assertThat(intentsOf(r)).extracting(OutboxEntry::id).containsExactly(IntentId.of(r.scope(), r.key(), 0));
  }

  @Test
  void aReleasedResponseTakesItsIntentsWithIt() throws Exception {
    IdempotentRequest r = request("alice", "order-4");
    Outcome outcome = idem.execute(r, outbox.effect(r, (c, out) -> {
      out.add(Intent.jetStream("orders.created", new byte[] {1}));
      return StoredResponse.of(503, "try later");
    }));
    assertThat(outcome.stored()).isFalse();
    assertThat(intentsOf(r)).isEmpty();
  }

  @Test
  void theTableRefusesASecondIntentWithTheSameId() throws Exception {
    IdempotentRequest r = request("alice", "order-5");
    placeOrder(r, 1);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try (IntentWriter w = outbox.writer(c, r)) {
        assertThatThrownBy(() -> w.add(Intent.jetStream("orders.created", new byte[] {2})))
            .isInstanceOf(SQLException.class)
            .hasMessageContaining("already in ob_" + suffix)
            .satisfies(e -> assertThat(((SQLException) e).getSQLState()).startsWith("23"));
      } finally {
        c.rollback();
        c.setAutoCommit(true);
      }
    }
    assertThat(intentsOf(r)).hasSize(1);
  }

  @Test
  void aWriterRefusesAnAutoCommitConnection() throws Exception {
    try (Connection c = ds.getConnection()) {
      assertThatThrownBy(() -> outbox.writer(c, request("alice", "order-6")))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("auto-commit");
    }
  }

  @Test
  void keysAndPrincipalsThatDifferOnlyByTrailingSpaceOrCaseAreDistinctIntents() throws Exception {
    // Written with the writer in plain transactions, so only the outbox table's comparisons count
    // (the key table's own exactness is the transactional contract's business).
    List<IdempotentRequest> requests = List.of(
        request("tenant", "pad-k1"), request("tenant", "pad-k1 "), request("tenant", "PAD-K1"), request("tenant ", "pad-k1"));
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      for (IdempotentRequest r : requests) {
        try (IntentWriter w = outbox.writer(c, r)) {
          w.add(Intent.jetStream("orders.created", r.key().value().getBytes(StandardCharsets.UTF_8)));
        }
      }
      c.commit();
      c.setAutoCommit(true);
    }
    for (IdempotentRequest r : requests) {
      List<OutboxEntry> rows = intentsOf(r);
      assertThat(rows).hasSize(1);
      assertThat(rows.get(0).key()).isEqualTo(r.key().value());
      assertThat(rows.get(0).scope()).isEqualTo(r.scope());
      assertThat(rows.get(0).id()).isEqualTo(IntentId.of(r.scope(), r.key(), 0));
    }
    assertThat(count("SELECT COUNT(*) FROM ob_" + suffix)).isEqualTo(4);
  }

  /**
   * Regression: on a pool that hands out connections with auto-commit off, the relay took the
   * borrowed connection for a caller's transaction and never committed its claim or its marks, so
   * the pool rolled them back and every round delivered the same intents again.
   */
  @Test
  void onAPoolWithAutoCommitOffTheRelaysMarksAndTheSchemaAreCommitted() throws Exception {
    DataSource off = new AutoCommitOffDataSource(ds);
    Outbox other = Outbox.builder().table("ob2_" + suffix).build();
    try {
      other.createSchema(off);
      try (Connection c = ds.getConnection()) {
        assertThat(other.counts(c)).as("the table, committed").containsEntry(OutboxEntry.State.PENDING, 0L);
      }
    } finally {
      try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS ob2_" + suffix);
      }
    }
    placeOrder(request("alice", "order-pool"), 2);
    RecordingTransport transport = new RecordingTransport(Intent.Kind.RABBITMQ);
    OutboxRelay relay = OutboxRelay.builder(outbox, off).transport(transport).backoff(Duration.ZERO, Duration.ZERO).build();
    assertThat(relay.runOnce()).isEqualTo(new OutboxRelay.Round(2, 2, 0, 0, 0));
    assertThat(relay.runOnce().claimed()).as("nothing left to claim").isZero();
    assertThat(transport.deliveries.values()).containsOnly(1);
    try (Connection c = ds.getConnection()) {
      assertThat(outbox.counts(c)).containsEntry(OutboxEntry.State.SENT, 2L).containsEntry(OutboxEntry.State.PENDING, 0L);
    }
  }

  @Test
  void theRelayMarksDeliveredIntentsSentAndClaimsNothingMore() throws Exception {
    placeOrder(request("alice", "order-7"), 3);
    RecordingTransport transport = new RecordingTransport(Intent.Kind.RABBITMQ);
    OutboxRelay relay = relay(transport).build();

    OutboxRelay.Round round = relay.runOnce();
    assertThat(round).isEqualTo(new OutboxRelay.Round(3, 3, 0, 0, 0));
    assertThat(relay.runOnce().claimed()).isZero();
    assertThat(transport.deliveries.values()).containsOnly(1);
    try (Connection c = ds.getConnection()) {
      assertThat(outbox.counts(c)).containsEntry(OutboxEntry.State.SENT, 3L).containsEntry(OutboxEntry.State.PENDING, 0L);
    }
  }

  @Test
  void aRelayClaimsOnlyTheKindsItHasTransportsFor() throws Exception {
    IdempotentRequest r = request("alice", "order-8");
    idem.execute(r, outbox.effect(r, (c, out) -> {
      out.add(Intent.rabbitMq("x", "k", new byte[0]));
      out.add(Intent.jetStream("s.t", new byte[0]));
      return StoredResponse.of(201, "");
    }));
    RecordingTransport jet = new RecordingTransport(Intent.Kind.JETSTREAM);
    assertThat(relay(jet).build().drain().sent()).isEqualTo(1);
    assertThat(jet.deliveries).containsOnlyKeys(IntentId.of(r.scope(), r.key(), 1));
  }

  @Test
  void failedAttemptsBackOffThenTheIntentIsDeadWithItsReasonAndCanBeRetriedByHand() throws Exception {
    IdempotentRequest r = request("alice", "order-9");
    placeOrder(r, 1);
    String id = IntentId.of(r.scope(), r.key(), 0);
    RecordingTransport transport = new RecordingTransport(Intent.Kind.RABBITMQ);
    transport.answer = e -> Delivery.retry(e.id(), "broker unreachable");
    OutboxRelay relay = relay(transport).maxAttempts(3).build();

    OutboxRelay.Round total = relay.drain();
    assertThat(total.retried()).isEqualTo(2);
    assertThat(total.dead()).isEqualTo(1);
    assertThat(transport.deliveries.get(id)).isEqualTo(3);
    try (Connection c = ds.getConnection()) {
      List<OutboxEntry> dead = outbox.dead(c, 10);
      assertThat(dead).extracting(OutboxEntry::id).containsExactly(id);
      assertThat(dead.get(0).lastError()).contains("gave up after 3 attempts").contains("broker unreachable");
      assertThat(dead.get(0).attempts()).isEqualTo(3);

      transport.answer = e -> Delivery.delivered(e.id());
      assertThat(outbox.retry(c, id)).isTrue();
      assertThat(outbox.retry(c, id)).isFalse();
      assertThat(relay.drain().sent()).isEqualTo(1);
      assertThat(outbox.find(c, id).orElseThrow().state()).isEqualTo(OutboxEntry.State.SENT);
      assertThat(outbox.retry(c, id)).isFalse();
    }
  }

  @Test
  void theBackoffDelaysTheNextAttempt() throws Exception {
    IdempotentRequest r = request("alice", "order-10");
    placeOrder(r, 1);
    RecordingTransport transport = new RecordingTransport(Intent.Kind.RABBITMQ);
    transport.answer = e -> Delivery.retry(e.id(), "timeout");
    OutboxRelay relay = OutboxRelay.builder(outbox, ds).transport(transport)
        .backoff(Duration.ofSeconds(30), Duration.ofMinutes(1)).build();
    assertThat(relay.runOnce().retried()).isEqualTo(1);
    assertThat(relay.runOnce().claimed()).isZero();
  }

  @Test
  void aRejectedIntentIsDeadAtOnce() throws Exception {
    IdempotentRequest r = request("alice", "order-11");
    placeOrder(r, 1);
    RecordingTransport transport = new RecordingTransport(Intent.Kind.RABBITMQ);
    transport.answer = e -> Delivery.rejected(e.id(), "HTTP 400 (bad order)");
    assertThat(relay(transport).build().runOnce().dead()).isEqualTo(1);
    try (Connection c = ds.getConnection()) {
      assertThat(outbox.dead(c, 5).get(0).lastError()).isEqualTo("rejected: HTTP 400 (bad order)");
    }
  }

  /** Stands for a relay process that dies: nothing after it runs, nothing is marked. */
  static final class RelayKilled extends Error {
    RelayKilled() {
      super("relay killed");
    }
  }

  @Test
  void aRelayThatDiesMidBatchLeavesItsIntentsToAnotherAfterTheLease() throws Exception {
    placeOrder(request("alice", "order-12"), 4);
    RecordingTransport dying = new RecordingTransport(Intent.Kind.RABBITMQ);
    dying.answer = e -> {
      throw new RelayKilled();
    };
    OutboxRelay first = relay(dying).lease(Duration.ofMillis(1500)).build();
    assertThatThrownBy(first::runOnce).isInstanceOf(RelayKilled.class);

    RecordingTransport healthy = new RecordingTransport(Intent.Kind.RABBITMQ);
    OutboxRelay second = relay(healthy).build();
    assertThat(second.runOnce().claimed()).as("leased to the dead relay").isZero();
    Thread.sleep(1700);
    OutboxRelay.Round round = second.drain();
    assertThat(round.sent()).isEqualTo(4);
    try (Connection c = ds.getConnection()) {
      assertThat(outbox.intentsOf(c, request("alice", "order-12")))
          .allSatisfy(e -> {
            assertThat(e.state()).isEqualTo(OutboxEntry.State.SENT);
            assertThat(e.attempts()).isEqualTo(2);
          });
    }
  }

  @Test
  void anIntentWhoseLastAttemptWasLeftByADeadRelayIsDeadNotLost() throws Exception {
    placeOrder(request("alice", "order-13"), 1);
    RecordingTransport dying = new RecordingTransport(Intent.Kind.RABBITMQ);
    dying.answer = e -> {
      throw new RelayKilled();
    };
    assertThatThrownBy(relay(dying).lease(Duration.ofMillis(200)).maxAttempts(1).build()::runOnce)
        .isInstanceOf(RelayKilled.class);
    Thread.sleep(400);
    RecordingTransport healthy = new RecordingTransport(Intent.Kind.RABBITMQ);
    assertThat(relay(healthy).maxAttempts(1).build().runOnce().dead()).isEqualTo(1);
    assertThat(healthy.deliveries).isEmpty();
    try (Connection c = ds.getConnection()) {
      assertThat(outbox.dead(c, 5).get(0).lastError()).contains("stopped before it reported an outcome");
    }
  }

  @Test
  void sentIntentsArePurgedByAge() throws Exception {
    placeOrder(request("alice", "order-14"), 2);
    relay(new RecordingTransport(Intent.Kind.RABBITMQ)).build().drain();
    try (Connection c = ds.getConnection()) {
      assertThat(outbox.purgeSent(c, Duration.ofHours(1))).isZero();
      Thread.sleep(20);
      assertThat(outbox.purgeSent(c, Duration.ofMillis(1))).isEqualTo(2);
    }
  }
}
