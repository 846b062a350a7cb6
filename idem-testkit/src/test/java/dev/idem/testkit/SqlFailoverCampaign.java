package dev.idem.testkit;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemListener;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.DataSourceTransactionRunner;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.jdbc.EffectTable;
import dev.idem.lab.jdbc.SimpleDataSource;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * A bounded failover campaign on a replicated SQL database that the tests start (a Galera Cluster,
 * or a PostgreSQL primary with a standby): transactional-mode creates through {@link
 * TransactionalIdempotency} on a {@link DataSourceTransactionRunner} while a node or the primary is
 * killed with {@code kill -9}, counting the idempotency keys whose effect committed more than once
 * and the acknowledged answers the database lost.
 *
 * <p><b>Load.</b> {@code threads} workers run {@code operations} creates, each with an idempotency
 * key of its own; the effect inserts one row tagged with the key into an effects table and answers
 * {@code 201 {"id":<row id>}}. Each worker holds one connection to the cluster's URL (every node,
 * or both servers with {@code targetServerType=primary}) and opens a new one after any failure. An
 * operation is repeated with its key, after 50 ms, until it is answered executed or replayed
 * (acknowledged); any other result (a store failure, a rollback, an unknown commit, an exception)
 * is not final. After the load every key is sent once more, as a client that lost its answer
 * would: that must replay the acknowledged answer.
 *
 * <p><b>Faults.</b> {@code failovers} times, evenly spaced over the run, the cluster's {@link
 * Cluster#failover(int)} runs while the workers go on (operations are held back half a stretch past
 * a failover's mark until it is over, so each one happens under load).
 *
 * <p><b>Counts.</b> <em>Duplicates</em>: keys with more than one row in the effects table at the end.
 * <em>Acknowledged answers lost</em>: keys whose acknowledged row id is not in the effects table at
 * the end (the commit was acknowledged, then lost in the failover); their final resend runs the
 * effect again (<em>re-executed on resend</em>). <em>Unresolved</em>: operations without an
 * acknowledged answer after 3 minutes.
 *
 * <p>Run: the tests {@code GaleraFailoverTest} and {@code PostgresStandbyFailoverTest} run a short
 * campaign; {@code -Didem.ha.args="--operations=10000 --failovers=5"} a long one ({@code
 * docs/reports/reliability.md}). Not thread-safe; one run at a time.
 */
final class SqlFailoverCampaign {

  /** What the campaign needs of a replicated database. */
  interface Cluster {
    /** @return a JDBC URL of the campaign's database that finds a writable node after a failover */
    String url();

    /**
     * Kills a node or the primary and brings the cluster back to full strength; returns once it is.
     *
     * @param round the failover's number, from 0
     * @return what was done, for the report
     */
    String failover(int round) throws Exception;
  }

  /** The campaign's settings. */
  record Options(int operations, int failovers, int threads, JdbcIdempotency.Strategy strategy) {

    static Options parse(String... args) {
      int operations = 2_000;
      int failovers = 1;
      int threads = 8;
      JdbcIdempotency.Strategy strategy = JdbcIdempotency.Strategy.CLAIM_FIRST;
      for (String arg : args) {
        if (arg.isBlank()) {
          continue;
        }
        String[] kv = arg.replaceFirst("^--", "").split("=", 2);
        if (kv.length != 2) {
          throw new IllegalArgumentException("options are --name=value: " + arg);
        }
        switch (kv[0]) {
          case "operations" -> operations = Integer.parseInt(kv[1]);
          case "failovers" -> failovers = Integer.parseInt(kv[1]);
          case "threads" -> threads = Integer.parseInt(kv[1]);
          case "strategy" -> strategy = JdbcIdempotency.Strategy.valueOf(kv[1].toUpperCase(Locale.ROOT).replace('-', '_'));
          default -> throw new IllegalArgumentException("unknown option " + arg);
        }
      }
      return new Options(operations, failovers, threads, strategy);
    }
  }

  /** What one run measured. */
  record Report(String label, int operations, int failovers, long millis, long loadMillis, int duplicates,
      int acknowledgedLost, int reExecutedOnResend, int changedOnResend, int unresolved, long retries,
      Map<String, Integer> notFinal, List<String> failoverLog) {

    /**
     * Asserts what every failover must keep, whatever the durability: each failover happened, every
     * operation got a final answer, no key committed a second effect.
     */
    void assertEveryFailoverRanAndNoKeyRanTwice(Options o) {
      org.assertj.core.api.Assertions.assertThat(failovers).isEqualTo(o.failovers());
      org.assertj.core.api.Assertions.assertThat(unresolved).as("operations without an acknowledged answer").isZero();
      org.assertj.core.api.Assertions.assertThat(duplicates)
          .as("keys with a second committed effect: the key and the effect commit together").isZero();
    }

    /** Asserts, besides {@link #assertEveryFailoverRanAndNoKeyRanTwice}, that no acknowledged answer was lost or changed. */
    void assertNothingAcknowledgedWasLost(Options o) {
      assertEveryFailoverRanAndNoKeyRanTwice(o);
      org.assertj.core.api.Assertions.assertThat(acknowledgedLost).as("acknowledged answers lost").isZero();
      org.assertj.core.api.Assertions.assertThat(reExecutedOnResend).as("resends that ran the effect again").isZero();
      org.assertj.core.api.Assertions.assertThat(changedOnResend).as("resends answered otherwise").isZero();
    }

    double operationsPerSecond() {
      return loadMillis == 0 ? 0 : operations * 1000.0 / loadMillis;
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%s: %d operations, %d failovers, %.1f s (load %.1f s, %.0f creates/s);"
              + " duplicates: %d; acknowledged answers lost: %d (re-executed on resend: %d, other answer on resend: %d);"
              + " unresolved: %d; retries: %d %s; failovers: %s",
          label, operations, failovers, millis / 1000.0, loadMillis / 1000.0, operationsPerSecond(), duplicates,
          acknowledgedLost, reExecutedOnResend, changedOnResend, unresolved, retries, notFinal, failoverLog);
    }
  }

  private SqlFailoverCampaign() {}

  /**
   * Runs one campaign.
   *
   * @param cluster the database, running and at full strength
   * @param label names the run in the report
   * @param o the settings
   * @return the counts
   */
  static Report run(Cluster cluster, String label, Options o) throws Exception {
    String run = UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    EffectTable effects = new EffectTable("ha_effects_" + run);
    JdbcIdempotency keys = JdbcIdempotency.builder().table("ha_keys_" + run).strategy(o.strategy()).build();
    try (Connection c = DriverManager.getConnection(cluster.url())) {
      effects.recreate(c);
      keys.createSchema(c);
    }
    Map<String, String> acknowledged = new ConcurrentHashMap<>();
    Map<String, Integer> notFinal = new ConcurrentHashMap<>();
    AtomicLong retries = new AtomicLong();
    AtomicInteger unresolved = new AtomicInteger();
    AtomicInteger next = new AtomicInteger();
    AtomicInteger completed = new AtomicInteger();
    int stretch = o.operations() / (o.failovers() + 1);
    int[] marks = new int[o.failovers()];
    for (int i = 0; i < marks.length; i++) {
      marks[i] = (i + 1) * stretch;
    }
    AtomicInteger failoversDone = new AtomicInteger();
    List<String> failoverLog = new ArrayList<>();
    Object gate = new Object();
    long start = System.nanoTime();

    ExecutorService pool = Executors.newFixedThreadPool(o.threads() + 1);
    try {
      Future<?> control = pool.submit(() -> {
        for (int i = 0; i < marks.length; i++) {
          while (completed.get() < marks[i]) {
            Thread.sleep(20);
          }
          long t = System.nanoTime();
          String what = cluster.failover(i);
          synchronized (failoverLog) {
            failoverLog.add(what + String.format(Locale.ROOT, " (%.1f s)", (System.nanoTime() - t) / 1e9));
          }
          synchronized (gate) {
            failoversDone.incrementAndGet();
            gate.notifyAll();
          }
        }
        return null;
      });
      List<Future<?>> workers = new ArrayList<>();
      for (int w = 0; w < o.threads(); w++) {
        workers.add(pool.submit(() -> {
          HeldConnection held = new HeldConnection(cluster.url());
          TransactionalIdempotency engine = new TransactionalIdempotency(keys, new DataSourceTransactionRunner(held.dataSource()),
              IdemListener.NONE);
          try {
            for (int n = next.getAndIncrement(); n < o.operations(); n = next.getAndIncrement()) {
              synchronized (gate) {
                while (failoversDone.get() < marks.length && n >= marks[failoversDone.get()] + stretch / 2) {
                  gate.wait(1000);
                  if (control.isDone()) {
                    break; // the control thread failed: report it below rather than wait forever
                  }
                }
              }
              String key = "k-" + run + "-" + n;
              String answer = untilAnswered(engine, held, request(key), creating(effects, key), retries, notFinal);
              if (answer == null) {
                unresolved.incrementAndGet();
              } else {
                acknowledged.put(key, answer);
              }
              completed.incrementAndGet();
            }
          } finally {
            held.discard();
          }
          return null;
        }));
      }
      for (Future<?> f : workers) {
        f.get(60, TimeUnit.MINUTES);
      }
      control.get(10, TimeUnit.MINUTES);
    } finally {
      pool.shutdownNow();
    }
    long loadMillis = (System.nanoTime() - start) / 1_000_000;

    // What the database kept: every effect row, by key.
    Map<String, Set<Long>> rows = new HashMap<>();
    try (Connection c = DriverManager.getConnection(cluster.url()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT tag, id FROM " + effects.name())) {
      while (rs.next()) {
        rows.computeIfAbsent(rs.getString(1), k -> new HashSet<>()).add(rs.getLong(2));
      }
    }
    int duplicates = 0;
    for (Set<Long> ids : rows.values()) {
      if (ids.size() > 1) {
        duplicates++;
      }
    }
    int lost = 0;
    for (Map.Entry<String, String> e : acknowledged.entrySet()) {
      Set<Long> ids = rows.getOrDefault(e.getKey(), Set.of());
      if (!ids.contains(idOf(e.getValue()))) {
        lost++;
      }
    }

    // The final resend: a client that lost its acknowledged answer sends the key again.
    int reExecuted = 0;
    int changed = 0;
    HeldConnection held = new HeldConnection(cluster.url());
    try {
      TransactionalIdempotency engine = new TransactionalIdempotency(keys, new DataSourceTransactionRunner(held.dataSource()),
          IdemListener.NONE);
      for (Map.Entry<String, String> e : acknowledged.entrySet()) {
        String key = e.getKey();
        boolean[] ran = new boolean[1];
        Effect effect = ctx -> {
          ran[0] = true;
          return creating(effects, key).run(ctx);
        };
        String again = untilAnswered(engine, held, request(key), effect, retries, notFinal);
        if (ran[0]) {
          reExecuted++;
        } else if (!e.getValue().equals(again)) {
          changed++;
        }
      }
    } finally {
      held.discard();
    }
    try (Connection c = DriverManager.getConnection(cluster.url()); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + effects.name());
      st.execute("DROP TABLE IF EXISTS " + keys.table());
    }
    long millis = (System.nanoTime() - start) / 1_000_000;
    return new Report(label, o.operations(), failoversDone.get(), millis, loadMillis, duplicates, lost, reExecuted, changed,
        unresolved.get(), retries.get(), new java.util.TreeMap<>(notFinal), List.copyOf(failoverLog));
  }

  /** @return the acknowledged answer's body, or {@code null} when none came within 3 minutes */
  private static String untilAnswered(TransactionalIdempotency engine, HeldConnection held, IdempotentRequest request, Effect effect,
      AtomicLong retries, Map<String, Integer> notFinal) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (System.nanoTime() < deadline) {
      String why;
      try {
        AttemptResult r = engine.attempt(request, effect);
        if (r.kind() == AttemptResult.Kind.EXECUTED || r.kind() == AttemptResult.Kind.REPLAYED) {
          return r.outcome().orElseThrow().response().bodyAsString();
        }
        why = r.kind().toString();
      } catch (RuntimeException e) {
        why = "threw " + e.getClass().getSimpleName();
      }
      notFinal.merge(why, 1, Integer::sum);
      retries.incrementAndGet();
      held.discard();
      Thread.sleep(50);
    }
    return null;
  }

  private static Effect creating(EffectTable effects, String key) {
    return ctx -> {
      long id = effects.insert(ctx.connection(), key, "{}");
      return StoredResponse.of(201, "{\"id\":" + id + "}");
    };
  }

  private static long idOf(String body) {
    return Long.parseLong(body.replaceAll("[^0-9]", ""));
  }

  private static IdempotentRequest request(String key) {
    return new IdempotentRequest(Scope.of("campaign", "POST /things"), IdempotencyKey.of(key),
        Fingerprint.ofJson("{}".getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * One connection a worker keeps across transactions (a pool of one): the runner's {@code close()}
   * leaves it open; {@link #discard()} closes it, and the next borrow opens a new one.
   */
  private static final class HeldConnection {
    private final String url;
    private Connection connection;

    HeldConnection(String url) {
      this.url = url;
    }

    DataSource dataSource() {
      return SimpleDataSource.of(this::borrow);
    }

    private Connection borrow() throws SQLException {
      if (connection == null) {
        DriverManager.setLoginTimeout(5);
        connection = DriverManager.getConnection(url);
      }
      Connection c = connection;
      return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> {
            if (method.getName().equals("close")) {
              return null; // kept for the next transaction
            }
            try {
              return method.invoke(c, args);
            } catch (java.lang.reflect.InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }

    void discard() {
      if (connection != null) {
        try {
          connection.close();
        } catch (SQLException ignored) {
          // a broken connection
        }
        connection = null;
      }
    }
  }
}
