package dev.idem.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.LeaseContext;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * An operation of steps behind the filter in lease mode: the handler runs them under the filter's
 * claim ({@link JdbcStepOperations#runClaimed} with the request's {@link
 * IdempotencyFilter#leaseContext}); a run that fails after a step answers 503
 * outcome-unknown and the retry with the same key resumes it, never running a recorded step again.
 */
class IdempotencyFilterStepsTest {

  @TempDir Path dir;
  SQLiteDataSource db;
  JdbcStepOperations operations;
  TestServer server;
  final AtomicInteger charges = new AtomicInteger();
  final Map<String, String> paymentsByKey = new ConcurrentHashMap<>();
  /** The step after which the next run fails, or {@code null}. */
  volatile String failAfter;

  final StepOperation ride = (steps, input) -> {
    String rider = new String(input, StandardCharsets.UTF_8);
    String rideId = steps.local("ride", c -> insert(c, "rides", rider));
    failIf("ride");
    String charge = steps.foreign("charge", key -> paymentsByKey.computeIfAbsent(key.value(), k -> "ch-" + charges.incrementAndGet()));
    failIf("charge");
    steps.local("receipt", c -> insert(c, "receipts", rideId + " " + charge));
    failIf("receipt");
    return StoredResponse.builder(201).header("Content-Type", "application/json")
        .body("{\"ride\":\"" + rideId + "\",\"charge\":\"" + charge + "\"}").build();
  };

  /** The handler: the ride's steps under the filter's claim, its final response written as the answer. */
  final HttpServlet rides = new HttpServlet() {
    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
      LeaseContext claim = IdempotencyFilter.leaseContext(req).orElseThrow();
      StoredResponse answer;
      try {
        answer = operations.runClaimed(claim, req.getInputStream().readAllBytes(), ride);
      } catch (RuntimeException | IOException e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      res.setStatus(answer.status());
      answer.headers().forEach((name, values) -> values.forEach(v -> res.addHeader(name, v)));
      res.getOutputStream().write(answer.body());
    }
  };

  @BeforeEach
  void start() throws Exception {
    db = new SQLiteDataSource();
    db.setUrl("jdbc:sqlite:" + dir.resolve("steps.db"));
    try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE rides (id TEXT PRIMARY KEY, body TEXT NOT NULL)");
      st.execute("CREATE TABLE receipts (id TEXT PRIMARY KEY, body TEXT NOT NULL)");
    }
    operations = JdbcStepOperations.builder(db).build(); // key table idem_keys: the filter's store below
    server = new TestServer(IdempotencyFilterConfig.builder(operations.keys()).required("POST", "/rides").build(), rides);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  @Test
  void aRunThatFailsAfterEachStepInTurnIsAnsweredOutcomeUnknownAndTheRetryResumesIt() throws Exception {
    for (String step : List.of("ride", "charge", "receipt")) {
      String key = "ride-" + step;
      failAfter = step;
      Answer failed = post(key, "alice");
      assertThat(failed.statusCode()).as(step).isEqualTo(503);
      assertThat(failed.headers().firstValue("Retry-After")).hasValue("1");
      assertThat(failed.body()).contains("urn:idem:problem:outcome-unknown").contains("processed in part");
      Answer resumed = post(key, "alice");
      assertThat(resumed.statusCode()).as(step + ": " + resumed.body()).isEqualTo(201);
      Answer replay = post(key, "alice");
      assertThat(replay.statusCode()).isEqualTo(201);
      assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(replay.body()).isEqualTo(resumed.body());
    }
    assertThat(count("rides")).as("one ride per operation").isEqualTo(3);
    assertThat(charges).as("one charge per operation").hasValue(3);
    assertThat(count("receipts")).as("one receipt per operation").isEqualTo(3);
  }

  @Test
  void anotherBodyUnderAKeyWhoseOperationStoppedHalfWayIsRefusedWith422() throws Exception {
    failAfter = "ride";
    assertThat(post("ride-reused", "alice").statusCode()).isEqualTo(503);
    Answer other = post("ride-reused", "bob");
    assertThat(other.statusCode()).isEqualTo(422);
    assertThat(post("ride-reused", "alice").statusCode()).isEqualTo(201);
    assertThat(count("rides")).isEqualTo(1);
  }

  @Test
  void theCompleterFinishesAnOperationWhoseCallerGaveUpAndTheFilterReplaysItsAnswer() throws Exception {
    failAfter = "charge";
    assertThat(post("ride-given-up", "alice").statusCode()).isEqualTo(503);
    // the filter names the operation "POST /rides": the completer's body for it is the same ride
    assertThat(operations.completeAbandoned(Map.of("POST /rides", ride), 10)).isEqualTo(1);
    Answer retry = post("ride-given-up", "alice");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(count("rides")).isEqualTo(1);
    assertThat(charges).hasValue(1);
    assertThat(count("receipts")).isEqualTo(1);
  }

  private void failIf(String step) {
    if (step.equals(failAfter)) {
      failAfter = null;
      throw new IllegalStateException("the run failed after " + step);
    }
  }

  private static String insert(Connection c, String table, String body) throws SQLException {
    String id = table + "-" + UUID.randomUUID();
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (id, body) VALUES (?, ?)")) {
      ps.setString(1, id);
      ps.setString(2, body);
      ps.executeUpdate();
    }
    return id;
  }

  private long count(String table) throws SQLException {
    try (Connection c = db.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** A response with its body as text. */
  record Answer(int statusCode, java.net.http.HttpHeaders headers, String body) {}

  private Answer post(String key, String rider) throws Exception {
    HttpResponse<byte[]> r = server.send(server.request("/rides").header("Idempotency-Key", key)
        .header("Content-Type", "text/plain").POST(BodyPublishers.ofString(rider)).build());
    return new Answer(r.statusCode(), r.headers(), new String(r.body(), StandardCharsets.UTF_8));
  }
}
