package dev.idem.spring.method;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.LeaseContext;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.StepOperation;
import dev.idem.jdbc.steps.JdbcStepOperations;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentCalls;
import dev.idem.spring.internal.Jackson2JsonCodec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.aop.framework.ProxyFactory;
import org.sqlite.SQLiteDataSource;

/**
 * An operation of steps in an {@link Idempotent} method in lease mode: the method runs them under
 * its claim ({@link IdempotentCalls#currentLeaseContext()}, {@link
 * JdbcStepOperations#runClaimed}); a call that fails after a step throws {@link
 * OutcomeUnknownException} and the next call with the same key resumes it.
 */
class IdempotentMethodStepsTest {

  /** The method's result; its JSON is the operation's final response body, so the completer's answer decodes too. */
  public record Ride(String ride, String charge) {}

  static final ObjectMapper MAPPER = new ObjectMapper();

  @TempDir Path dir;
  SQLiteDataSource db;
  JdbcStepOperations operations;
  final AtomicInteger charges = new AtomicInteger();
  final AtomicInteger methodRuns = new AtomicInteger();
  final Map<String, String> paymentsByKey = new ConcurrentHashMap<>();
  volatile String failAfter;

  final StepOperation ride = (steps, input) -> {
    String rider = new String(input, StandardCharsets.UTF_8);
    String rideId = steps.local("ride", c -> insert(c, rider));
    failIf("ride");
    String charge = steps.foreign("charge", key -> paymentsByKey.computeIfAbsent(key.value(), k -> "ch-" + charges.incrementAndGet()));
    failIf("charge");
    return StoredResponse.builder(200).header("Content-Type", "application/json")
        .body(MAPPER.writeValueAsBytes(new Ride(rideId, charge))).build();
  };

  /** The application's service. */
  public class Rides {
    @Idempotent(operation = "rides.create")
    public Ride create(@Idempotent.Key String key, String rider) throws Exception {
      methodRuns.incrementAndGet();
      LeaseContext claim = IdempotentCalls.currentLeaseContext().orElseThrow();
      StoredResponse answer = operations.runClaimed(claim, rider.getBytes(StandardCharsets.UTF_8), ride);
      return MAPPER.readValue(answer.body(), Ride.class);
    }
  }

  Rides rides;

  @BeforeEach
  void start() throws SQLException {
    db = new SQLiteDataSource();
    db.setUrl("jdbc:sqlite:" + dir.resolve("steps.db"));
    try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE rides (id TEXT PRIMARY KEY, rider TEXT NOT NULL)");
    }
    operations = JdbcStepOperations.builder(db).build();
    LeaseIdempotency engine = LeaseIdempotency.builder(operations.keys()).build(); // the same key table
    ProxyFactory factory = new ProxyFactory(new Rides());
    factory.addAdvice(new IdempotentMethodInterceptor(engine, null, null, new Jackson2JsonCodec(MAPPER), call -> "alice"));
    rides = (Rides) factory.getProxy();
  }

  @Test
  void aCallThatFailsAfterAStepThrowsOutcomeUnknownAndTheNextCallResumesIt() throws Exception {
    failAfter = "charge";
    assertThatThrownBy(() -> rides.create("r-1", "alice")).isInstanceOfSatisfying(OutcomeUnknownException.class,
        e -> assertThat(e.phase()).isEqualTo(OutcomeUnknownException.Phase.PARTIAL));
    Ride resumed = rides.create("r-1", "alice");
    assertThat(resumed.charge()).isEqualTo("ch-1");
    assertThat(rides.create("r-1", "alice")).as("replayed").isEqualTo(resumed);
    assertThat(methodRuns).as("the replay runs nothing").hasValue(2);
    assertThat(rideRows()).isEqualTo(1);
    assertThat(charges).hasValue(1);
  }

  @Test
  void theCompleterFinishesACallWhoseCallerGaveUpAndTheNextCallReplaysItsResult() throws Exception {
    failAfter = "ride";
    assertThatThrownBy(() -> rides.create("r-2", "alice")).isInstanceOf(OutcomeUnknownException.class);
    assertThat(operations.completeAbandoned(Map.of("rides.create", ride), 10)).isEqualTo(1);
    Ride replayed = rides.create("r-2", "alice");
    assertThat(replayed.charge()).isEqualTo("ch-1");
    assertThat(methodRuns).as("the completer ran the steps; the method ran once").hasValue(1);
    assertThat(rideRows()).isEqualTo(1);
    assertThat(charges).hasValue(1);
  }

  private void failIf(String step) {
    if (step.equals(failAfter)) {
      failAfter = null;
      throw new IllegalStateException("the call failed after " + step);
    }
  }

  private static String insert(Connection c, String rider) throws SQLException {
    String id = "ride-" + UUID.randomUUID();
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO rides (id, rider) VALUES (?, ?)")) {
      ps.setString(1, id);
      ps.setString(2, rider);
      ps.executeUpdate();
    }
    return id;
  }

  private long rideRows() throws SQLException {
    try (Connection c = db.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM rides")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
