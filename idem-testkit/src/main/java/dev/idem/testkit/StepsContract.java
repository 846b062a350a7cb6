package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Effect;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.LeaseContext;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.LeaseLostException;
import dev.idem.core.Outcome;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.DerivedKeys;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import dev.idem.lab.jdbc.JdbcTarget;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The multi-step operation contract that every JDBC backend passes ({@link JdbcStepOperations}):
 * a ride that records itself (local step), charges a card at a payment service that honours
 * idempotency keys (foreign call with a derived key), then writes a receipt message (local step),
 * each run killed after each step in turn. A backend runs it by subclassing and returning its
 * database from {@link #target()}; the tests are never copied per backend. Each test uses tables of
 * its own and drops them.
 */
public abstract class StepsContract {

  private static final Duration LEASE = Duration.ofMillis(400);
  private static final Duration PAST_LEASE = Duration.ofMillis(650);

  /** @return the database under test */
  protected abstract JdbcTarget target();

  private String suffix;
  private JdbcStepOperations steps;
  private final AtomicInteger charges = new AtomicInteger();
  private final AtomicInteger rideRuns = new AtomicInteger();
  private final AtomicInteger receiptRuns = new AtomicInteger();
  /** The payment service: one charge per idempotency key, its answer replayed for a repeated key. */
  private final Map<String, String> payments = new ConcurrentHashMap<>();
  private final List<String> derivedKeysSent = new ArrayList<>();

  /** Where a run is killed: after the named step, before the next one begins. */
  private volatile String killAfter;
  /** Whether the next run answers 503 (the payment service unavailable) after the ride's step. */
  private volatile boolean unavailableAfterRide;

  private static final class Killed extends RuntimeException {
    Killed(String step) {
      super("killed after " + step);
    }
  }

  @BeforeEach
  void createTables() throws SQLException {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    steps = JdbcStepOperations.builder(target().dataSource()).keyTable("keys_" + suffix).stepTable("steps_" + suffix)
        .lease(LEASE).retention(Duration.ofMinutes(5)).build();
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE rides_" + suffix + " (id VARCHAR(64) PRIMARY KEY, rider VARCHAR(64) NOT NULL)");
      st.execute("CREATE TABLE receipts_" + suffix + " (id VARCHAR(64) PRIMARY KEY, body VARCHAR(200) NOT NULL)");
    }
  }

  @AfterEach
  void dropTables() throws SQLException {
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      for (String t : new String[] {"rides_", "receipts_", "steps_", "keys_"}) {
        st.execute("DROP TABLE IF EXISTS " + t + suffix);
      }
    }
  }

  /** The ride: a local step, a foreign charge, a receipt in the outbox's place, and the final answer. */
  private final StepOperation ride = (s, input) -> {
    String rider = new String(input, StandardCharsets.UTF_8);
    String rideId = s.local("ride", c -> {
      rideRuns.incrementAndGet();
      String id = "ride-" + UUID.randomUUID();
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO rides_" + suffix + " (id, rider) VALUES (?, ?)")) {
        ps.setString(1, id);
        ps.setString(2, rider);
        ps.executeUpdate();
      }
      return id;
    });
    kill("ride");
    if (unavailableAfterRide) {
      unavailableAfterRide = false;
      return StoredResponse.of(503, "{\"error\":\"the payment service is unavailable\"}");
    }
    String charge = s.foreign("charge", key -> {
      synchronized (derivedKeysSent) {
        derivedKeysSent.add(key.value());
      }
      String answer = payments.computeIfAbsent(key.value(), k -> "ch-" + charges.incrementAndGet());
      if ("charge-call".equals(killAfter)) {
        killAfter = null;
        throw new Killed("the charge, before its answer was recorded");
      }
      return answer;
    });
    kill("charge");
    String receipt = s.local("receipt", c -> {
      receiptRuns.incrementAndGet();
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO receipts_" + suffix + " (id, body) VALUES (?, ?)")) {
        ps.setString(1, "rcpt-" + rideId);
        ps.setString(2, "ride " + rideId + " charged " + charge);
        ps.executeUpdate();
      }
      return "rcpt-" + rideId;
    });
    kill("receipt");
    return StoredResponse.builder(201).header("Content-Type", "application/json")
        .body("{\"ride\":\"" + rideId + "\",\"charge\":\"" + charge + "\",\"receipt\":\"" + receipt + "\"}").build();
  };

  private void kill(String step) {
    if (step.equals(killAfter)) {
      killAfter = null;
      throw new Killed(step);
    }
  }

  private IdempotentRequest request(String key) {
    return new IdempotentRequest(Scope.of("alice", "POST /rides"), IdempotencyKey.of(key),
        Fingerprint.ofJson("{\"rider\":\"alice\"}".getBytes(StandardCharsets.UTF_8)));
  }

  private static byte[] input() {
    return "alice".getBytes(StandardCharsets.UTF_8);
  }

  private long count(String table) throws SQLException {
    try (Connection c = target().open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + table + suffix)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** After a resume and a replay: the same final response, one ride, one charge, one receipt, no step run twice. */
  private void assertReplayedOnceEach(String step, Outcome resumed, Outcome replay) throws SQLException {
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(resumed.response());
    assertThat(count("rides_")).as(step + ": rides").isEqualTo(1);
    assertThat(charges).as(step + ": charges").hasValue(1);
    assertThat(count("receipts_")).as(step + ": receipts").isEqualTo(1);
    assertThat(rideRuns).as(step + ": the ride step never re-ran").hasValue(1);
    assertThat(receiptRuns).as(step + ": the receipt step never re-ran").hasValue(1);
  }

  private void assertOneOfEach() throws SQLException {
    assertThat(count("rides_")).as("rides").isEqualTo(1);
    assertThat(charges).as("charges").hasValue(1);
    assertThat(count("receipts_")).as("receipts").isEqualTo(1);
    assertThat(rideRuns).as("the ride step ran once").hasValue(1);
    assertThat(receiptRuns).as("the receipt step ran at most once").hasValue(1);
  }

  @Test
  void aWholeRunRecordsEveryStepOnceAndARetryReplaysTheFinalResponse() throws Exception {
    Outcome first = steps.execute(request("k-whole"), input(), ride);
    Outcome again = steps.execute(request("k-whole"), input(), ride);
    assertThat(first.replayed()).isFalse();
    assertThat(first.response().status()).isEqualTo(201);
    assertThat(again.replayed()).isTrue();
    assertThat(again.response()).isEqualTo(first.response());
    assertOneOfEach();
  }

  @Test
  void createSchemaMakesTheKeyTableTooWhenTablesAreNotCreatedOnFirstUse() throws Exception {
    // createSchema made the step table only, though it said it also made the key table: with
    // createSchema(false) every run then failed with "no such table" on the key table.
    JdbcStepOperations explicit = JdbcStepOperations.builder(target().dataSource()).keyTable("keys_" + suffix)
        .stepTable("steps_" + suffix).lease(LEASE).createSchema(false).build();
    try (Connection c = target().open()) {
      explicit.createSchema(c);
    }
    Outcome first = explicit.execute(request("k-explicit-schema"), input(), ride);
    assertThat(first.response().status()).isEqualTo(201);
    assertThat(explicit.execute(request("k-explicit-schema"), input(), ride).replayed()).isTrue();
    assertOneOfEach();
  }

  @Test
  void aRunKilledAfterEachStepInTurnIsResumedAfterItsLastRecoveryPointWithTheSameFinalResponse() throws Exception {
    for (String step : new String[] {"ride", "charge-call", "charge", "receipt"}) {
      resetCounters();
      String key = "k-kill-" + step;
      killAfter = step;
      assertThatThrownBy(() -> steps.execute(request(key), input(), ride)).isInstanceOf(Killed.class);
      assertThatThrownBy(() -> steps.execute(request(key), input(), ride)).as("within the lease")
          .isInstanceOf(RequestInProgressException.class);
      Thread.sleep(PAST_LEASE.toMillis());
      Outcome resumed = steps.execute(request(key), input(), ride);
      assertThat(resumed.replayed()).as(step).isFalse();
      assertThat(resumed.recovery()).as(step).isTrue();
      Outcome replay = steps.execute(request(key), input(), ride);
      assertReplayedOnceEach(step, resumed, replay);
      clearTables();
    }
  }

  /** A lease engine on the operations' own key table: the servlet filter's and the starter's engine in lease mode. */
  private LeaseIdempotency engine() {
    return LeaseIdempotency.builder(steps.keys()).lease(Duration.ofSeconds(30)).retention(Duration.ofMinutes(5)).build();
  }

  private Effect claimed(StepOperation operation) {
    return ctx -> steps.runClaimed(ctx.lease(), input(), operation);
  }

  @Test
  void behindALeaseEngineARunThatFailsAfterEachStepInTurnIsResumedByTheNextRetryWithTheSameFinalResponse() throws Exception {
    LeaseIdempotency engine = engine();
    for (String step : new String[] {"ride", "charge-call", "charge", "receipt"}) {
      resetCounters();
      String key = "k-engine-" + step;
      killAfter = step;
      // The engine releases the key of a failed effect; after a recorded step the claim was handed
      // over first, so the release changes nothing and the retry resumes instead of starting again.
      assertThatThrownBy(() -> engine.execute(request(key), claimed(ride))).as(step)
          .isInstanceOfSatisfying(OutcomeUnknownException.class,
              e -> assertThat(e.phase()).isEqualTo(OutcomeUnknownException.Phase.PARTIAL))
          .hasCauseInstanceOf(Killed.class);
      Outcome resumed = engine.execute(request(key), claimed(ride));
      assertThat(resumed.replayed()).as(step).isFalse();
      assertThat(resumed.recovery()).as(step + ": taken over at once, the lease ended by the hand-over").isTrue();
      Outcome replay = engine.execute(request(key), claimed(ride));
      assertReplayedOnceEach(step, resumed, replay);
      clearTables();
    }
  }

  @Test
  void behindALeaseEngineARunThatFailsBeforeItsFirstStepReleasesTheKeyAndTheRetryRunsItOnce() throws Exception {
    LeaseIdempotency engine = engine();
    StepOperation failsFirst = (s, in) -> {
      throw new IllegalStateException("the rider's card was declined before anything ran");
    };
    assertThatThrownBy(() -> engine.execute(request("k-engine-first"), claimed(failsFirst)))
        .isInstanceOf(IllegalStateException.class);
    assertThat(steps.keys().status(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-engine-first")))
        .isInstanceOf(KeyStatus.Absent.class);
    Outcome retry = engine.execute(request("k-engine-first"), claimed(ride));
    assertThat(retry.recovery()).isFalse();
    assertOneOfEach();
  }

  @Test
  void behindALeaseEngineTheCompleterFinishesAnOperationWhoseRunFailedAndTheEngineReplaysIt() throws Exception {
    LeaseIdempotency engine = engine();
    killAfter = "charge";
    assertThatThrownBy(() -> engine.execute(request("k-engine-abandoned"), claimed(ride)))
        .isInstanceOf(OutcomeUnknownException.class);
    assertThat(steps.completeAbandoned(Map.of("POST /rides", ride), 100)).as("handed over: no lease to wait for").isEqualTo(1);
    Outcome callersRetry = engine.execute(request("k-engine-abandoned"), claimed(ride));
    assertThat(callersRetry.replayed()).isTrue();
    assertThat(callersRetry.response().status()).isEqualTo(201);
    assertOneOfEach();
  }

  /**
   * Regression: a final answer that the engine's response policy does not store (a 503 after the
   * ride's step) freed the key, and the next request deleted the recorded ride and recorded a second.
   */
  @Test
  void behindALeaseEngineAnAnswerItDoesNotStoreAfterAStepFreesTheKeyAndTheNextRequestResumesAfterTheStep() throws Exception {
    LeaseIdempotency engine = engine();
    unavailableAfterRide = true;
    Outcome unavailable = engine.execute(request("k-engine-503"), claimed(ride));
    assertThat(unavailable.response().status()).isEqualTo(503);
    assertThat(unavailable.stored()).as("released by the response policy").isFalse();
    Outcome retry = engine.execute(request("k-engine-503"), claimed(ride));
    assertThat(retry.response().status()).isEqualTo(201);
    assertThat(engine.execute(request("k-engine-503"), claimed(ride)).replayed()).isTrue();
    assertOneOfEach();
  }

  @Test
  void purgeOrphanedStepsKeepsTheYoungStepsOfAReleasedKeyAndDeletesThemOnceOlderThanTheRetention() throws Exception {
    JdbcStepOperations shortLived = JdbcStepOperations.builder(target().dataSource()).keyTable("keys_" + suffix)
        .stepTable("steps_" + suffix).lease(LEASE).retention(Duration.ofSeconds(1)).build();
    LeaseIdempotency engine = LeaseIdempotency.builder(shortLived.keys()).lease(LEASE).retention(Duration.ofSeconds(1)).build();
    unavailableAfterRide = true;
    engine.execute(request("k-purge"), ctx -> shortLived.runClaimed(ctx.lease(), input(), ride)); // 503: key released
    assertThat(shortLived.purgeOrphanedSteps(100)).as("the released operation's steps are young").isZero();
    assertThat(count("steps_")).as("its input and its ride").isEqualTo(2);
    Thread.sleep(1_300);
    assertThat(shortLived.purgeOrphanedSteps(100)).isEqualTo(2);
    assertThat(count("steps_")).isZero();
  }

  @Test
  void runClaimedRefusesAClaimThatIsNotInItsKeyTable() {
    LeaseContext elsewhere = new LeaseContext(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-elsewhere"), "token", false);
    assertThatThrownBy(() -> steps.runClaimed(elsewhere, input(), ride)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("the lease engine's store must be this key table");
    assertThat(rideRuns).hasValue(0);
  }

  @Test
  void laterStepsSeeTheRecordedResultsOfEarlierOnesNeverARerun() throws Exception {
    killAfter = "charge";
    assertThatThrownBy(() -> steps.execute(request("k-results"), input(), ride)).isInstanceOf(Killed.class);
    String rideId;
    try (Connection c = target().open(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT id FROM rides_" + suffix)) {
      rs.next();
      rideId = rs.getString(1);
    }
    Thread.sleep(PAST_LEASE.toMillis());
    Outcome resumed = steps.execute(request("k-results"), input(), ride);
    assertThat(resumed.response().bodyAsString()).contains("\"ride\":\"" + rideId + "\"").contains("\"charge\":\"ch-1\"")
        .contains("\"receipt\":\"rcpt-" + rideId + "\"");
  }

  @Test
  void theForeignCallCarriesTheSameDerivedKeyOnEveryRun() throws Exception {
    killAfter = "charge-call";
    assertThatThrownBy(() -> steps.execute(request("k-derived"), input(), ride)).isInstanceOf(Killed.class);
    Thread.sleep(PAST_LEASE.toMillis());
    steps.execute(request("k-derived"), input(), ride);
    IdempotencyKey expected = DerivedKeys.of(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-derived"), "charge");
    assertThat(derivedKeysSent).containsExactly(expected.value(), expected.value());
    assertThat(charges).as("the payment service charged once").hasValue(1);
    assertThat(DerivedKeys.of(Scope.of("bob", "POST /rides"), IdempotencyKey.of("k-derived"), "charge"))
        .as("another principal's same key").isNotEqualTo(expected);
    assertThat(DerivedKeys.of(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-derived"), "refund")).isNotEqualTo(expected);
    assertThat(expected.value()).startsWith(DerivedKeys.PREFIX).hasSize(DerivedKeys.PREFIX.length() + 64);
  }

  @Test
  void theCompleterFinishesAnOperationWhoseCallerGaveUpAfterItsLease() throws Exception {
    killAfter = "ride";
    assertThatThrownBy(() -> steps.execute(request("k-abandoned"), input(), ride)).isInstanceOf(Killed.class);
    assertThat(steps.completeAbandoned(Map.of("POST /rides", ride), 100)).as("the lease still runs").isZero();
    KeyStatus halfDone = steps.status(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-abandoned"));
    assertThat(halfDone).isInstanceOf(KeyStatus.InProgress.class);
    assertThat(((KeyStatus.InProgress) halfDone).step()).as("the last recovery point").isEqualTo("ride");
    Thread.sleep(PAST_LEASE.toMillis());
    assertThat(steps.completeAbandoned(Map.of("POST /other", ride), 100)).as("no body for that operation").isZero();
    assertThat(steps.completeAbandoned(Map.of("POST /rides", ride), 100)).isEqualTo(1);
    assertThat(steps.completeAbandoned(Map.of("POST /rides", ride), 100)).as("nothing left").isZero();
    Outcome callersRetry = steps.execute(request("k-abandoned"), input(), ride);
    assertThat(callersRetry.replayed()).isTrue();
    assertThat(callersRetry.response().status()).isEqualTo(201);
    assertThat(steps.keys().status(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-abandoned")))
        .isInstanceOf(KeyStatus.Completed.class);
    assertOneOfEach();
  }

  @Test
  void aLocalStepThatFailsKeepsNothingOfItsWritesAndARunThatFailedBeforeAnyStepReleasesTheKey() throws Exception {
    StepOperation failing = (s, input) -> {
      s.local("ride", c -> {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO rides_" + suffix + " (id, rider) VALUES ('x', 'alice')")) {
          ps.executeUpdate();
        }
        throw new IllegalStateException("card declined");
      });
      return StoredResponse.of(201, "{}");
    };
    assertThatThrownBy(() -> steps.execute(request("k-fail"), input(), failing)).hasMessage("card declined");
    assertThat(count("rides_")).as("the step's write rolled back with it").isZero();
    assertThat(steps.keys().status(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-fail")))
        .as("nothing happened: the key is free again").isEqualTo(KeyStatus.absent());
    Outcome retry = steps.execute(request("k-fail"), input(), ride);
    assertThat(retry.replayed()).isFalse();
    assertThat(retry.recovery()).isFalse();
    assertOneOfEach();
  }

  @Test
  void theKeyReusedWithAnotherRequestIsRefusedWhileInProgressAndWhenCompleted() throws Exception {
    IdempotentRequest other = new IdempotentRequest(Scope.of("alice", "POST /rides"), IdempotencyKey.of("k-reuse"),
        Fingerprint.ofJson("{\"rider\":\"mallory\"}".getBytes(StandardCharsets.UTF_8)));
    killAfter = "ride";
    assertThatThrownBy(() -> steps.execute(request("k-reuse"), input(), ride)).isInstanceOf(Killed.class);
    Thread.sleep(PAST_LEASE.toMillis());
    assertThatThrownBy(() -> steps.execute(other, input(), ride)).isInstanceOf(IdempotencyKeyReusedException.class);
    steps.execute(request("k-reuse"), input(), ride);
    assertThatThrownBy(() -> steps.execute(other, input(), ride)).isInstanceOf(IdempotencyKeyReusedException.class);
    assertOneOfEach();
  }

  @Test
  void aRunWhoseLeaseWasTakenOverCannotRecordAnotherStep() throws Exception {
    java.util.concurrent.CountDownLatch paused = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch resume = new java.util.concurrent.CountDownLatch(1);
    StepOperation slow = (s, input) -> {
      s.local("ride", c -> "r1");
      paused.countDown();
      resume.await();
      s.local("receipt", c -> {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO receipts_" + suffix + " (id, body) VALUES ('stale', 'x')")) {
          ps.executeUpdate();
        }
        return "stale";
      });
      return StoredResponse.of(201, "stale");
    };
    java.util.concurrent.CompletableFuture<Throwable> stale = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
      try {
        steps.execute(request("k-fence"), input(), slow);
        return null;
      } catch (Throwable t) {
        return t;
      }
    });
    assertThat(paused.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    Thread.sleep(PAST_LEASE.toMillis());
    Outcome takeover = steps.execute(request("k-fence"), input(), (s, input) -> {
      assertThat(s.local("ride", c -> "r2")).as("the recorded result, not a re-run").isEqualTo("r1");
      return StoredResponse.of(201, "taken over");
    });
    assertThat(takeover.recovery()).isTrue();
    resume.countDown();
    assertThat(stale.get(10, java.util.concurrent.TimeUnit.SECONDS)).isInstanceOf(LeaseLostException.class);
    assertThat(count("receipts_")).as("the stale run's step rolled back").isZero();
    assertThat(steps.execute(request("k-fence"), input(), ride).response().bodyAsString()).isEqualTo("taken over");
  }

  private void resetCounters() {
    charges.set(0);
    rideRuns.set(0);
    receiptRuns.set(0);
    payments.clear();
  }

  private void clearTables() throws SQLException {
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("DELETE FROM rides_" + suffix);
      st.execute("DELETE FROM receipts_" + suffix);
    }
  }
}
