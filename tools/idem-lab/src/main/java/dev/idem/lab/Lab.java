package dev.idem.lab;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.jdbc.EffectTable;
import dev.idem.lab.jdbc.JdbcTarget;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reproduces the experiments of the seed article on a real database: each scenario runs once
 * without protection ({@value #NAIVE}: every attempt inserts) and once with Idem ({@value
 * #PROTECTED}: every attempt goes through {@link JdbcIdempotency}), and the effects are counted in
 * the database afterwards.
 *
 * <ol>
 *   <li>{@code lost-response}: create {@code {"value":42}}; the response of the first attempt is
 *       lost after the commit; the caller retries with the same key.
 *   <li>{@code concurrent}: N attempts with the same key, each on its own connection, released
 *       together by a barrier.
 *   <li>{@code key-reuse}: the same key with a different payload.
 *   <li>{@code distinct-keys}: two different keys with identical payloads.
 * </ol>
 *
 * <p>The lab owns two tables, {@value #EFFECTS_TABLE} and {@value #KEYS_TABLE}, and recreates them
 * at the start of every run. Not thread-safe: run one lab at a time per database.
 */
public final class Lab {

  /** The variant without a key table. */
  public static final String NAIVE = "naive";
  /** The variant protected by Idem. */
  public static final String PROTECTED = "protected";
  /** The table of effects the lab creates. */
  public static final String EFFECTS_TABLE = "idem_lab_effects";
  /** The key table the lab's Idem instance uses. */
  public static final String KEYS_TABLE = "idem_lab_keys";
  /** The scenarios, in run order. */
  public static final List<String> SCENARIOS = List.of("lost-response", "concurrent", "key-reuse", "distinct-keys");

  private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*(\\d+)");

  private final JdbcTarget target;
  private final int concurrency;
  private final EffectTable effects = new EffectTable(EFFECTS_TABLE);
  private final JdbcIdempotency idem = JdbcIdempotency.builder().table(KEYS_TABLE).build();
  private final String run = UUID.randomUUID().toString().substring(0, 8);

  /**
   * @param target the database
   * @param concurrency attempts in the {@code concurrent} scenario, from 2 to 256
   * @throws IllegalArgumentException if {@code concurrency} is out of range
   */
  public Lab(JdbcTarget target, int concurrency) {
    this.target = Objects.requireNonNull(target, "target");
    if (concurrency < 2 || concurrency > 256) {
      throw new IllegalArgumentException("concurrency must be between 2 and 256, was " + concurrency);
    }
    this.concurrency = concurrency;
  }

  /**
   * Recreates the lab's tables and runs every scenario under both variants.
   *
   * @return the report, one row per scenario and variant
   * @throws SQLException if the database cannot be reached or the tables cannot be created
   * @throws InterruptedException if interrupted while concurrent attempts run
   */
  public LabReport run() throws SQLException, InterruptedException {
    String database;
    try (Connection c = target.open()) {
      database = c.getMetaData().getDatabaseProductName() + " " + c.getMetaData().getDatabaseProductVersion();
      effects.recreate(c);
      try (Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + KEYS_TABLE);
      }
      idem.createSchema(c);
    }
    List<ScenarioResult> results = new ArrayList<>();
    for (String scenario : SCENARIOS) {
      for (String variant : List.of(NAIVE, PROTECTED)) {
        results.add(runScenario(scenario, variant));
      }
    }
    return new LabReport(database, redact(target.url()), results);
  }

  private ScenarioResult runScenario(String scenario, String variant) throws SQLException, InterruptedException {
    String tag = scenario + "/" + variant + "/" + run;
    Tally tally = new Tally();
    long intended;
    switch (scenario) {
      case "lost-response": {
        String key = key();
        attempt(variant, tag, key, "{\"value\":42}", true, tally);
        attempt(variant, tag, key, "{\"value\":42}", false, tally);
        intended = 1;
        break;
      }
      case "concurrent":
        concurrent(variant, tag, key(), tally);
        intended = 1;
        break;
      case "key-reuse": {
        String key = key();
        attempt(variant, tag, key, "{\"value\":42}", false, tally);
        attempt(variant, tag, key, "{\"value\":43}", false, tally);
        intended = 1;
        break;
      }
      case "distinct-keys":
        attempt(variant, tag, key(), "{\"value\":42}", false, tally);
        attempt(variant, tag, key(), "{\"value\":42}", false, tally);
        intended = 2;
        break;
      default:
        throw new IllegalArgumentException("unknown scenario " + scenario);
    }
    long stored;
    try (Connection c = target.open()) {
      stored = effects.count(c, tag);
    }
    return judge(scenario, variant, tally, stored, intended);
  }

  private static ScenarioResult judge(String scenario, String variant, Tally t, long stored, long intended) {
    List<Long> ids = t.ids;
    long distinct = new HashSet<>(ids).size();
    String verdict;
    if (t.errors > 0) {
      verdict = t.errors + " attempt(s) failed: " + t.firstError;
    } else if (stored > intended) {
      verdict = "duplicate effect";
    } else if (stored < intended) {
      verdict = "missing effect";
    } else if (scenario.equals("distinct-keys") ? distinct != 2 : distinct != 1) {
      verdict = "wrong ids";
    } else if (scenario.equals("key-reuse") && t.rejected != 1) {
      verdict = "reuse not rejected";
    } else {
      verdict = "ok";
    }
    return new ScenarioResult(
        scenario, variant, t.attempts, stored, ids, t.lost, t.rejected, t.errors, intended, verdict, verdict.equals("ok"));
  }

  private void attempt(String variant, String tag, String key, String json, boolean loseResponse, Tally tally) {
    tally.attempts++;
    int number = tally.attempts;
    try (Connection c = target.open()) {
      long id = create(c, variant, tag, key, json);
      tally.ids.add(id);
      if (loseResponse) {
        tally.lost++;
        throw new ResponseLostException(number);
      }
    } catch (ResponseLostException e) {
      // The caller sees a failure; the database already holds the effect. It retries next.
    } catch (IdempotencyKeyReusedException e) {
      tally.rejected++;
    } catch (Exception e) {
      tally.error(e);
    }
  }

  private void concurrent(String variant, String tag, String key, Tally tally) throws SQLException, InterruptedException {
    // Open every connection first: a database that cannot serve N connections is a set-up error
    // (reported by the caller), not a failure of the variant.
    List<Connection> connections = new ArrayList<>();
    try {
      for (int i = 0; i < concurrency; i++) {
        connections.add(target.open());
      }
      CyclicBarrier barrier = new CyclicBarrier(concurrency);
      ExecutorService pool = Executors.newFixedThreadPool(concurrency);
      try {
        List<Future<Long>> futures = new ArrayList<>();
        for (Connection c : connections) {
          futures.add(pool.submit(() -> {
            barrier.await(30, TimeUnit.SECONDS);
            return create(c, variant, tag, key, "{\"value\":42}");
          }));
        }
        for (Future<Long> f : futures) {
          tally.attempts++;
          try {
            tally.ids.add(f.get(60, TimeUnit.SECONDS));
          } catch (ExecutionException e) {
            tally.error(e.getCause());
          } catch (TimeoutException e) {
            tally.error(new IllegalStateException("no answer within 60 s"));
          }
        }
      } finally {
        pool.shutdownNow();
        pool.awaitTermination(10, TimeUnit.SECONDS);
      }
    } finally {
      for (Connection c : connections) {
        try {
          c.close();
        } catch (SQLException ignored) {
          // closing is best effort
        }
      }
    }
  }

  private long create(Connection c, String variant, String tag, String key, String json) throws Exception {
    if (variant.equals(NAIVE)) {
      return effects.insert(c, tag, json);
    }
    IdempotentRequest request =
        new IdempotentRequest(
            Scope.of("lab", tag), IdempotencyKey.of(key), Fingerprint.ofJson(json.getBytes(StandardCharsets.UTF_8)));
    Outcome outcome =
        idem.execute(c, request, ctx -> StoredResponse.of(201, "{\"id\":" + effects.insert(ctx.connection(), tag, json) + "}"));
    Matcher m = ID.matcher(outcome.response().bodyAsString());
    if (!m.find()) {
      throw new IllegalStateException("stored response has no id: " + outcome.response().bodyAsString());
    }
    return Long.parseLong(m.group(1));
  }

  /**
   * @param url a JDBC or broker URL, never {@code null}
   * @return the URL with the value of any {@code password} parameter, and the password of any
   *     {@code user:password@} part, replaced by {@code ***}
   */
  public static String redact(String url) {
    return url.replaceAll("(?i)(password=)[^&;]*", "$1***").replaceAll("(://[^:/@]*:)[^@/]*@", "$1***@");
  }

  private static String key() {
    return UUID.randomUUID().toString();
  }

  /** Counters of one scenario run. */
  private static final class Tally {
    int attempts;
    int lost;
    int rejected;
    int errors;
    String firstError;
    final List<Long> ids = new ArrayList<>();

    synchronized void error(Throwable e) {
      errors++;
      if (firstError == null) {
        firstError = e.getClass().getSimpleName() + ": " + e.getMessage();
      }
    }
  }
}
