package dev.idem.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.Outcome;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/** docs/steps.md's example on SQLite: a charge lost after it happened is resumed, never repeated. */
class StepsSnippetsTest {

  @TempDir Path dir;

  @Test
  void aRunThatDiesAtTheChargeKeepsItsLeaseSoARetryWithinItIsInProgress() throws Exception {
    SQLiteDataSource db = new SQLiteDataSource();
    db.setUrl("jdbc:sqlite:" + dir.resolve("rides.db") + "?journal_mode=WAL&busy_timeout=10000");
    try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE rides (rider TEXT NOT NULL)");
      st.execute("CREATE TABLE receipts (ride TEXT NOT NULL, charge TEXT NOT NULL)");
    }
    Map<String, String> charged = new ConcurrentHashMap<>();
    AtomicInteger charges = new AtomicInteger();
    AtomicInteger calls = new AtomicInteger();
    StepsSnippets.Payments payments = (key, rider, cents) -> {
      String id = charged.computeIfAbsent(key, k -> "ch_" + charges.incrementAndGet());
      if (calls.incrementAndGet() == 1) {
        throw new java.io.IOException("connection reset after the charge"); // the answer is lost
      }
      return id;
    };
    StepOperation ride = StepsSnippets.rideOperation(payments);
    assertThatThrownBy(() -> StepsSnippets.run(db, ride, "ann", "ride-1")).isInstanceOf(java.io.IOException.class);

    // the first run holds its 30 s lease: neither the completer nor a retry takes it over yet
    JdbcStepOperations completer = JdbcStepOperations.builder(db).build();
    assertThat(StepsSnippets.completer(completer, ride)).isZero();
    assertThat(charges).as("charged once, its answer lost").hasValue(1);
    assertThat(count(db, "rides")).isEqualTo(1);
    assertThat(count(db, "receipts")).isZero();
    assertThatThrownBy(() -> StepsSnippets.run(db, ride, "ann", "ride-1"))
        .isInstanceOf(dev.idem.core.RequestInProgressException.class);
  }

  @Test
  void aRetryAfterTheLeaseResumesAndReplays() throws Exception {
    SQLiteDataSource db = new SQLiteDataSource();
    db.setUrl("jdbc:sqlite:" + dir.resolve("rides2.db") + "?journal_mode=WAL&busy_timeout=10000");
    try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE rides (rider TEXT NOT NULL)");
      st.execute("CREATE TABLE receipts (ride TEXT NOT NULL, charge TEXT NOT NULL)");
    }
    Map<String, String> charged = new ConcurrentHashMap<>();
    AtomicInteger charges = new AtomicInteger();
    AtomicInteger calls = new AtomicInteger();
    StepOperation ride = StepsSnippets.rideOperation((key, rider, cents) -> {
      String id = charged.computeIfAbsent(key, k -> "ch_" + charges.incrementAndGet());
      if (calls.incrementAndGet() == 1) {
        throw new java.io.IOException("connection reset after the charge");
      }
      return id;
    });
    JdbcStepOperations operations = JdbcStepOperations.builder(db).lease(Duration.ofMillis(200)).build();
    assertThatThrownBy(() -> operations.execute(request("ann", "ride-2"), "ann".getBytes(), ride)).isInstanceOf(java.io.IOException.class);
    Thread.sleep(400);
    assertThat(StepsSnippets.completer(operations, ride)).as("the completer finishes it").isEqualTo(1);
    Outcome retry = operations.execute(request("ann", "ride-2"), "ann".getBytes(), ride);
    assertThat(retry.replayed()).isTrue();
    assertThat(retry.response().bodyAsString()).isEqualTo("{\"ride\":\"ann-ride\",\"charge\":\"ch_1\"}");
    assertThat(charges).as("charged once").hasValue(1);
    assertThat(count(db, "rides")).isEqualTo(1);
    assertThat(count(db, "receipts")).isEqualTo(1);
  }

  private static dev.idem.core.IdempotentRequest request(String rider, String key) {
    return new dev.idem.core.IdempotentRequest(dev.idem.core.Scope.of(rider, "POST /rides"), dev.idem.core.IdempotencyKey.of(key),
        dev.idem.core.Fingerprint.ofJson(("{\"rider\":\"" + rider + "\"}").getBytes(java.nio.charset.StandardCharsets.UTF_8)));
  }

  private static long count(SQLiteDataSource db, String table) throws Exception {
    try (Connection c = db.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
