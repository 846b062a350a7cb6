package dev.idem.cli.steps;

import dev.idem.cli.queue.ChildJvm;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.StoredResponse;
import dev.idem.core.steps.StepOperation;
import dev.idem.faultproxy.Fault;
import dev.idem.faultproxy.FaultProxy;
import dev.idem.jdbc.steps.JdbcStepOperations;
import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.lab.Lab;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * {@code idem lab --steps}: an operation of three steps (a ride recorded in the database, a card
 * charged at a payment service over HTTP, a receipt written in the database), its process killed
 * after each step in turn, once {@value #NAIVE} and once {@value #PROTECTED}, with the rides,
 * charges and receipts counted in the database afterwards.
 *
 * <ul>
 *   <li>{@value #NAIVE}: the three steps in a row, each in auto-commit, the charge without a key;
 *       the caller's retry runs them all again.
 *   <li>{@value #PROTECTED}: the same steps under one idempotency key with {@link
 *       JdbcStepOperations} (local steps with recovery points; the charge a foreign call with the
 *       key derived from the operation's key and the step's name); the caller's retry, once the
 *       killed run's lease ran out, resumes after the last recovery point, or the completer ({@link
 *       JdbcStepOperations#completeAbandoned}) finishes the operation and the retry replays.
 * </ul>
 *
 * <p>The payment service ({@link PaymentService}) runs in this process behind Idem, reached through
 * a {@link FaultProxy} of its own per row; a killed run is a child JVM ({@link StepsLabChild})
 * killed with SIGKILL at the point it announced. The last row kills nothing: the proxy loses the
 * payment service's first answer after the charge was made.
 *
 * <p>The lab drops and recreates its tables ({@value #RIDES_TABLE}, {@value #RECEIPTS_TABLE},
 * {@value #KEYS_TABLE}, {@value #STEPS_TABLE}, {@value PaymentService#CHARGES_TABLE}, {@value
 * PaymentService#KEYS_TABLE}) on every run. Not thread-safe; one run at a time per database.
 */
public final class StepsLab {

  static final String NAIVE = "naive";
  static final String PROTECTED = "protected";
  static final String RIDES_TABLE = "idem_slab_rides";
  static final String RECEIPTS_TABLE = "idem_slab_receipts";
  static final String KEYS_TABLE = "idem_slab_keys";
  static final String STEPS_TABLE = "idem_slab_steps";
  /** The operation's name in its scope, and the completer's map key. */
  static final String OPERATION = "POST /rides";
  /** The protected run's lease: after it, a killed run is resumed by a retry or the completer. */
  static final Duration LEASE = Duration.ofSeconds(2);

  private static final Duration CHILD_WAIT = Duration.ofSeconds(90);
  private static final Duration FINISH_WAIT = Duration.ofSeconds(30);
  private static final Pattern CHARGE_ID = Pattern.compile("\"charge\"\\s*:\\s*\"([A-Za-z0-9_]+)\"");

  /**
   * A row of the lab: where the first run stops, and who finishes the operation.
   *
   * @param name the row's name in the table
   * @param point the point the child is killed at ({@code null}: nothing killed, the answer lost)
   * @param killed the table's description of the crash
   * @param completer whether the protected operation is finished by the completer before the retry
   */
  record Crash(String name, String point, String killed, boolean completer) {}

  /** The rows, in run order. */
  static final List<Crash> CRASHES = List.of(
      new Crash("after-ride", "ride", "after the ride's step, before the charge", false),
      new Crash("charged-unrecorded", "charge-answered", "after the charge answered, before its record", false),
      new Crash("after-charge", "charge", "after the charge's step, before the receipt", true),
      new Crash("after-receipt", "receipt", "after the receipt's step, before the final response", false),
      new Crash("lost-charge-answer", null, "none: the proxy lost the charge's answer", false));

  /**
   * One row of the table.
   *
   * @param row the crash's name
   * @param variant naive or protected
   * @param killed where the first run stopped
   * @param finishedBy {@code retry}, or {@code completer} (then the retry replays)
   * @param chargeCalls {@code POST /charges} requests that reached the proxy
   * @param rides ride rows counted afterwards
   * @param charges charges the payment service made
   * @param receipts receipt rows counted afterwards
   * @param verdict {@code ok}, the duplicates, or what went wrong
   * @param ok whether the row shows one ride, one charge and one receipt with a settled answer
   */
  public record Row(String row, String variant, String killed, String finishedBy, int chargeCalls, long rides,
      long charges, long receipts, String verdict, boolean ok) {}

  /**
   * @param database product and version
   * @param url the JDBC URL, password masked
   * @param rows the rows, in run order
   */
  public record Report(String database, String url, List<Row> rows) {
    /** @return whether every protected row is ok */
    public boolean protectedOk() {
      return rows.stream().filter(r -> r.variant().equals(PROTECTED)).allMatch(Row::ok)
          && rows.stream().anyMatch(r -> r.variant().equals(PROTECTED));
    }
  }

  /** The database cannot be used, or the payment service cannot start: exit status 2. */
  public static final class Unusable extends Exception {
    Unusable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Called at each point of the operation; the child announces its crash point there and waits. */
  @FunctionalInterface
  interface Hook {
    void at(String point) throws Exception;

    Hook NONE = point -> { };
  }

  // ---- shared with the child process ----

  static JdbcStepOperations operations(DataSource db) {
    return JdbcStepOperations.builder(db).keyTable(KEYS_TABLE).stepTable(STEPS_TABLE).lease(LEASE)
        .createSchema(false).build();
  }

  static IdempotentRequest request(String key, String row) {
    return IdempotentRequest.ofJson("steps-lab", OPERATION, key, input(row));
  }

  static byte[] input(String row) {
    return ("{\"row\":\"" + row + "\"}").getBytes(StandardCharsets.UTF_8);
  }

  /** The protected operation: the ride, the charge with its derived key, the receipt. */
  static StepOperation protectedRide(URI payments, Hook hook) {
    return (steps, input) -> {
      String row = rowOf(input);
      String ride = steps.local("ride", c -> insertRide(c, row, PROTECTED));
      hook.at("ride");
      String charge = steps.foreign("charge", key -> {
        String id = charge(payments, row, PROTECTED, key.value());
        hook.at("charge-answered");
        return id;
      });
      hook.at("charge");
      steps.local("receipt", c -> insertReceipt(c, row, PROTECTED, ride, charge));
      hook.at("receipt");
      return answer(ride, charge);
    };
  }

  /** The naive operation: the same three steps in a row, each in auto-commit, the charge without a key. */
  static StoredResponse naiveRide(DataSource db, URI payments, String row, Hook hook) throws Exception {
    String ride;
    try (Connection c = db.getConnection()) {
      ride = insertRide(c, row, NAIVE);
    }
    hook.at("ride");
    String charge = charge(payments, row, NAIVE, null);
    hook.at("charge-answered");
    hook.at("charge");
    try (Connection c = db.getConnection()) {
      insertReceipt(c, row, NAIVE, ride, charge);
    }
    hook.at("receipt");
    return answer(ride, charge);
  }

  private static String rowOf(byte[] input) {
    String s = new String(input, StandardCharsets.UTF_8);
    return s.substring("{\"row\":\"".length(), s.length() - 2);
  }

  private static StoredResponse answer(String ride, String charge) {
    return StoredResponse.builder(201).header("Content-Type", "application/json")
        .body("{\"ride\":\"" + ride + "\",\"charge\":\"" + charge + "\"}").build();
  }

  private static String insertRide(Connection c, String row, String variant) throws SQLException {
    String id = "ride_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + RIDES_TABLE + " (id, row_name, variant) VALUES (?, ?, ?)")) {
      ps.setString(1, id);
      ps.setString(2, row);
      ps.setString(3, variant);
      ps.executeUpdate();
    }
    return id;
  }

  private static String insertReceipt(Connection c, String row, String variant, String ride, String charge)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + RECEIPTS_TABLE
        + " (id, row_name, variant, ride, charge_id) VALUES (?, ?, ?, ?, ?)")) {
      ps.setString(1, UUID.randomUUID().toString());
      ps.setString(2, row);
      ps.setString(3, variant);
      ps.setString(4, ride);
      ps.setString(5, charge);
      ps.executeUpdate();
    }
    return "sent";
  }

  /**
   * {@code POST /charges} at the payment service (through its proxy).
   *
   * @param key the idempotency key, or {@code null} for none
   * @return the charge's id
   * @throws IOException if the answer is lost or is not a 201
   */
  static String charge(URI payments, String row, String variant, String key) throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(payments.resolve("/charges"))
        .timeout(Duration.ofSeconds(10))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"row\":\"" + row + "\",\"variant\":\"" + variant + "\"}"));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    Matcher m = CHARGE_ID.matcher(response.body());
    if (response.statusCode() != 201 || !m.find()) {
      throw new IOException("the payment service answered " + response.statusCode() + ": " + response.body());
    }
    return m.group(1);
  }

  // ---- the lab ----

  private final JdbcTarget target;
  private final DataSource db;
  private final JdbcStepOperations operations;
  private String database;

  private StepsLab(String jdbcUrl) {
    this.target = JdbcTarget.of(jdbcUrl);
    this.db = target.dataSource();
    this.operations = operations(db);
  }

  /**
   * Recreates the lab's tables, starts the payment service and runs every row, naive then protected.
   *
   * @param jdbcUrl the database's JDBC URL
   * @return the report
   * @throws Unusable if the tables cannot be made or the payment service cannot start
   */
  public static Report run(String jdbcUrl) throws Unusable {
    StepsLab lab = new StepsLab(Objects.requireNonNull(jdbcUrl, "jdbcUrl"));
    PaymentService payments;
    try {
      lab.prepare();
      payments = PaymentService.start(lab.db);
    } catch (SQLException | IOException | RuntimeException e) {
      throw new Unusable("cannot use the database " + Lab.redact(jdbcUrl) + ": " + e.getMessage(), e);
    }
    try (payments) {
      List<Row> rows = new ArrayList<>();
      for (Crash crash : CRASHES) {
        for (String variant : List.of(NAIVE, PROTECTED)) {
          rows.add(lab.guard(crash, variant, payments));
        }
      }
      return new Report(lab.database, Lab.redact(jdbcUrl), rows);
    }
  }

  private void prepare() throws SQLException {
    database = target.describe();
    try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
      for (String t : List.of(RIDES_TABLE, RECEIPTS_TABLE, KEYS_TABLE, STEPS_TABLE)) {
        st.execute("DROP TABLE IF EXISTS " + t);
      }
      st.execute("CREATE TABLE " + RIDES_TABLE
          + " (id VARCHAR(40) PRIMARY KEY, row_name VARCHAR(40) NOT NULL, variant VARCHAR(20) NOT NULL)");
      st.execute("CREATE TABLE " + RECEIPTS_TABLE + " (id VARCHAR(40) PRIMARY KEY, row_name VARCHAR(40) NOT NULL,"
          + " variant VARCHAR(20) NOT NULL, ride VARCHAR(40) NOT NULL, charge_id VARCHAR(40) NOT NULL)");
      operations.createSchema(c);
    }
  }

  private Row guard(Crash crash, String variant, PaymentService payments) {
    try (FaultProxy proxy = proxy(crash, payments)) {
      try {
        return run(crash, variant, proxy);
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        return new Row(crash.name(), variant, crash.killed(), "-", proxy.requestsSeen(), count(RIDES_TABLE, crash, variant),
            count(PaymentService.CHARGES_TABLE, crash, variant), count(RECEIPTS_TABLE, crash, variant),
            "error: " + e.getMessage(), false);
      }
    } catch (IOException e) {
      return new Row(crash.name(), variant, crash.killed(), "-", 0, 0, 0, 0, "error: " + e.getMessage(), false);
    }
  }

  private static FaultProxy proxy(Crash crash, PaymentService payments) throws IOException {
    FaultProxy.Builder b = FaultProxy.builder().target(payments.address().getAddress().getHostAddress(),
        payments.address().getPort());
    if (crash.point() == null) {
      b.fault(1, Fault.LOSE_RESPONSE);
    }
    return b.start();
  }

  private Row run(Crash crash, String variant, FaultProxy proxy) throws Exception {
    String key = UUID.randomUUID().toString();
    boolean naive = variant.equals(NAIVE);
    URI payments = proxy.uri();
    StepOperation ride = protectedRide(payments, Hook.NONE);
    IdempotentRequest request = request(key, crash.name());
    // the first run: killed at the crash's point, or (no point) its charge's answer lost
    if (crash.point() != null) {
      try (ChildJvm child = ChildJvm.start(StepsLabChild.class.getName(),
          List.of(variant, target.url(), payments.toString(), key, crash.name(), crash.point()))) {
        child.await(StepsLabChild.AT + crash.point(), CHILD_WAIT);
        child.kill();
      }
    } else {
      try {
        if (naive) {
          naiveRide(db, payments, crash.name(), Hook.NONE);
        } else {
          operations.execute(request, input(crash.name()), ride);
        }
        throw new IllegalStateException("the first run ended although the proxy lost the charge's answer");
      } catch (IOException expected) {
        // the charge was made; its answer never arrived
      }
    }
    // the caller's retry (after the completer, where the row has it)
    String finishedBy = "retry";
    String fault = null;
    if (naive) {
      naiveRide(db, payments, crash.name(), Hook.NONE);
    } else {
      if (crash.completer()) {
        finishedBy = "completer";
        if (!complete(ride)) {
          fault = "the completer finished nothing within " + FINISH_WAIT.toSeconds() + " s";
        }
      }
      Outcome retry = retry(request, crash.name(), ride);
      Outcome again = operations.execute(request, input(crash.name()), ride);
      if (retry.response().status() != 201) {
        fault = "the retry answered " + retry.response().status();
      } else if (crash.completer() && !retry.replayed()) {
        fault = "the retry after the completer ran the operation instead of replaying it";
      } else if (!again.replayed() || !again.response().equals(retry.response())) {
        fault = "a second retry did not replay the final response";
      }
    }
    long rides = count(RIDES_TABLE, crash, variant);
    long charges = count(PaymentService.CHARGES_TABLE, crash, variant);
    long receipts = count(RECEIPTS_TABLE, crash, variant);
    String verdict;
    if (fault != null) {
      verdict = "error: " + fault;
    } else if (rides == 1 && charges == 1 && receipts == 1) {
      verdict = "ok";
    } else {
      List<String> wrong = new ArrayList<>();
      describe(wrong, rides, "ride");
      describe(wrong, charges, "charge");
      describe(wrong, receipts, "receipt");
      verdict = String.join(", ", wrong);
    }
    return new Row(crash.name(), variant, crash.killed(), finishedBy, proxy.requestsSeen(), rides, charges, receipts,
        verdict, verdict.equals("ok"));
  }

  private static void describe(List<String> wrong, long n, String what) {
    if (n > 1) {
      wrong.add(n + " " + what + "s");
    } else if (n < 1) {
      wrong.add("no " + what);
    }
  }

  /** The caller's retry: 409 while the killed run's lease lasts, then the operation resumed. */
  private Outcome retry(IdempotentRequest request, String row, StepOperation ride) throws Exception {
    long deadline = System.nanoTime() + FINISH_WAIT.toNanos();
    while (true) {
      try {
        return operations.execute(request, input(row), ride);
      } catch (RequestInProgressException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(200);
      }
    }
  }

  /** Runs the completer until it finished an operation (the killed run's lease must end first). */
  private boolean complete(StepOperation ride) throws InterruptedException {
    long deadline = System.nanoTime() + FINISH_WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      if (operations.completeAbandoned(Map.of(OPERATION, ride), 10) > 0) {
        return true;
      }
      Thread.sleep(200);
    }
    return false;
  }

  private long count(String table, Crash crash, String variant) {
    try (Connection c = db.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + table + " WHERE row_name = ? AND variant = ?")) {
      ps.setString(1, crash.name());
      ps.setString(2, variant);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      return -1;
    }
  }
}
