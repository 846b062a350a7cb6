package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.GaleraSettings;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.jdbc.EffectTable;
import dev.idem.testclusters.GaleraProcesses;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What a Galera Cluster adds to the transactional contract: duplicates that reach different nodes
 * at once (no node waits for another's lock: the loser's transaction fails certification, at its
 * COMMIT or when the winner's write set is applied, as a deadlock, 1213/40001), and retries that
 * reach another node than the first attempt (a read sees another node's commit only once that node
 * applied it, unless the session sets {@code wsrep_sync_wait}).
 */
class GaleraMultiNodeTest {

  @RegisterExtension static final GaleraTestCluster GALERA = GaleraTestCluster.shared();

  private static final int RACERS_PER_NODE = 4;

  private String suffix;
  private EffectTable effects;
  private final AtomicInteger invocations = new AtomicInteger();

  @BeforeEach
  void createTables() throws SQLException {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    effects = new EffectTable("effects_" + suffix);
    try (Connection c = GALERA.target(0).open()) {
      effects.recreate(c);
    }
  }

  @AfterEach
  void dropTables() throws SQLException {
    try (Connection c = GALERA.target(0).open(); java.sql.Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + effects.name());
      st.execute("DROP TABLE IF EXISTS keys_" + suffix);
    }
  }

  private JdbcIdempotency keys(JdbcIdempotency.Strategy strategy) throws SQLException {
    JdbcIdempotency keys = JdbcIdempotency.builder().table("keys_" + suffix).strategy(strategy).build();
    try (Connection c = GALERA.target(0).open()) {
      keys.createSchema(c); // DDL is replicated in total order before any racer starts
    }
    return keys;
  }

  /**
   * {@link JdbcIdempotency#execute} in Idem's own transaction, four racers on each of the three
   * nodes: one effect commits, and every racer gets its answer.
   */
  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void concurrentDuplicatesOnDifferentNodesCommitOneEffectAndEveryoneGetsItsAnswer(JdbcIdempotency.Strategy strategy)
      throws Exception {
    JdbcIdempotency keys = keys(strategy);
    IdempotentRequest request = request("k-race-" + strategy);
    List<String> answers = race(node -> {
      try (Connection c = GALERA.target(node).open()) {
        Outcome o = keys.execute(c, request, connCtx -> creating(connCtx.connection(), request));
        return (o.replayed() ? "replayed " : "executed ") + o.response().bodyAsString();
      }
    });
    System.out.println("[idem-testkit] Galera, execute, " + strategy + ": " + invocations + " effect runs for "
        + answers.size() + " racers on 3 nodes");
    assertOneAnswer(answers);
  }

  /**
   * {@link TransactionalIdempotency} (the servlet filter's and the starter's transactional mode) on
   * a {@link dev.idem.jdbc.DataSourceTransactionRunner} per node: one effect commits, and every racer
   * is answered executed or replayed, never "rolled back, retry".
   */
  @ParameterizedTest
  @EnumSource(JdbcIdempotency.Strategy.class)
  void concurrentDuplicatesOnDifferentNodesThroughTheEngineAreAllAnsweredWithTheWinnersResponse(JdbcIdempotency.Strategy strategy)
      throws Exception {
    JdbcIdempotency keys = keys(strategy);
    List<TransactionalIdempotency> engines = new ArrayList<>();
    for (int n = 0; n < 3; n++) {
      engines.add(TransactionalIdempotency.onDataSource(keys, GALERA.target(n).dataSource(), IdemListener.NONE));
    }
    IdempotentRequest request = request("k-engine-" + strategy);
    Effect effect = ctx -> creating(ctx.connection(), request);
    List<String> answers = race(node -> {
      AttemptResult r = engines.get(node).attempt(request, effect);
      if (r.kind() != AttemptResult.Kind.EXECUTED && r.kind() != AttemptResult.Kind.REPLAYED) {
        return r.kind() + " " + r.failure().map(Throwable::toString).orElse("");
      }
      return (r.kind() == AttemptResult.Kind.REPLAYED ? "replayed " : "executed ")
          + r.outcome().orElseThrow().response().bodyAsString();
    });
    System.out.println("[idem-testkit] Galera, engine, " + strategy + ": " + invocations + " effect runs for "
        + answers.size() + " racers on 3 nodes: " + answers);
    assertOneAnswer(answers);
  }

  /**
   * A retry sent to another node right after the first attempt committed: with {@code
   * wsrep_sync_wait=1} the replay's read waits until that node applied every write set committed
   * before it, so it always finds the record. Without it the count of misses is printed.
   */
  @Test
  void aReplayOnAnotherNodeRightAfterTheCommitFindsTheRecordWithSyncWait() throws Exception {
    JdbcIdempotency keys = keys(JdbcIdempotency.Strategy.CLAIM_FIRST);
    int rounds = 200;
    int[] missed = new int[2];
    try (Connection writer = GALERA.target(0).open();
        Connection waiting = GALERA.target(1).open();
        Connection notWaiting = DriverManager.getConnection(GALERA.url(1, "wsrep_sync_wait=0"))) {
      for (int i = 0; i < rounds; i++) {
        for (int w = 0; w < 2; w++) {
          IdempotentRequest request = request("k-replay-" + w + "-" + i);
          keys.execute(writer, request, connCtx -> StoredResponse.of(201, "{\"id\":" + effects.insert(connCtx.connection(), "t", "{}") + "}"));
          if (keys.replay(w == 0 ? waiting : notWaiting, request).isEmpty()) {
            missed[w]++;
          }
        }
      }
    }
    System.out.println("[idem-testkit] Galera: replays on another node right after the commit that found no record: "
        + missed[0] + " of " + rounds + " with wsrep_sync_wait=1, " + missed[1] + " of " + rounds + " with wsrep_sync_wait=0");
    assertThat(missed[0]).as("replays that missed a committed record with wsrep_sync_wait=1").isZero();
  }

  /** The start-up check ({@link GaleraSettings}) names a session without {@code wsrep_sync_wait}; a plain server has nothing to check. */
  @Test
  void theStartUpCheckRefusesASessionWithoutSyncWaitAndPassesOneWithIt() throws Exception {
    try (Connection waiting = GALERA.target(0).open();
        Connection notWaiting = DriverManager.getConnection(GALERA.url(0, "wsrep_sync_wait=0"))) {
      assertThat(GaleraSettings.isGaleraNode(waiting)).isTrue();
      assertThat(GaleraSettings.problems(waiting)).isEmpty();
      GaleraSettings.require(waiting);
      assertThat(GaleraSettings.problems(notWaiting)).singleElement().asString().startsWith("wsrep_sync_wait is 0");
      assertThatThrownBy(() -> GaleraSettings.require(notWaiting))
          .isInstanceOf(IdemStoreException.class).hasMessageContaining("wsrep_sync_wait=1");
    }
    GaleraProcesses plain = GaleraProcesses.single();
    try (Connection c = DriverManager.getConnection(plain.jdbcUrl(0, ""))) {
      assertThat(GaleraSettings.isGaleraNode(c)).isFalse();
      assertThat(GaleraSettings.problems(c)).isEmpty();
    } finally {
      plain.close();
    }
  }

  private StoredResponse creating(Connection conn, IdempotentRequest request) throws Exception {
    invocations.incrementAndGet();
    long id = effects.insert(conn, request.key().value(), "{}");
    Thread.sleep(50); // the racers' transactions overlap
    return StoredResponse.of(201, "{\"id\":" + id + "}");
  }

  private void assertOneAnswer(List<String> answers) throws SQLException {
    assertThat(answers).filteredOn(a -> a.startsWith("executed ")).as("answers %s", answers).hasSize(1);
    String body = answers.stream().filter(a -> a.startsWith("executed ")).findFirst().orElseThrow().substring("executed ".length());
    assertThat(answers).as("every racer's answer").allMatch(a -> a.equals("executed " + body) || a.equals("replayed " + body));
    try (Connection c = GALERA.target(2).open();
        java.sql.PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + effects.name())) {
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getLong(1)).as("committed effects").isEqualTo(1);
      }
    }
  }

  @FunctionalInterface
  private interface Racer {
    String run(int node) throws Exception;
  }

  private static List<String> race(Racer racer) throws Exception {
    int racers = 3 * RACERS_PER_NODE;
    CyclicBarrier barrier = new CyclicBarrier(racers);
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    try {
      List<Future<String>> futures = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        int node = i % 3;
        Callable<String> task = () -> {
          barrier.await(30, TimeUnit.SECONDS);
          return racer.run(node);
        };
        futures.add(pool.submit(task));
      }
      List<String> answers = new ArrayList<>();
      for (Future<String> f : futures) {
        try {
          answers.add(f.get(120, TimeUnit.SECONDS));
        } catch (java.util.concurrent.ExecutionException e) {
          answers.add("threw " + e.getCause());
        }
      }
      return answers;
    } finally {
      pool.shutdownNow();
    }
  }

  private static IdempotentRequest request(String key) {
    return new IdempotentRequest(Scope.of("alice", "POST /things"), IdempotencyKey.of(key),
        Fingerprint.ofJson("{}".getBytes(StandardCharsets.UTF_8)));
  }
}
