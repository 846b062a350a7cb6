package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.core.AttemptResult;
import dev.idem.core.Effect;
import dev.idem.core.EffectFailedException;
import dev.idem.core.IdemListener;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.KeyStatus;
import dev.idem.core.KeyStatusReader;
import dev.idem.core.Outcome;
import dev.idem.core.ResponseProtection;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.jdbc.DataSourceTransactionRunner;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.jdbc.TransactionRunner;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.lab.EffectTable;
import dev.idem.lab.JdbcTarget;
import dev.idem.lab.Lab;
import dev.idem.lab.LabReport;
import dev.idem.lab.ScenarioResult;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The transactional-mode contract that every JDBC backend passes. A backend runs it by subclassing
 * and returning its database from {@link #target()}; the tests are never copied per backend.
 *
 * <pre>{@code
 * class PostgresTransactionalContractTest extends TransactionalContract {
 *   @RegisterExtension static final TestDatabase db = TestDatabase.postgres();
 *   @Override protected JdbcTarget target() { return db.target(); }
 * }
 * }</pre>
 *
 * <p>Every test asserts the stored state (effects counted with SQL, records read back), not only
 * the responses. Each test uses its own tables, named with a random suffix, and drops them.
 */
public abstract class TransactionalContract {

  private static final int RACERS = 32;

  private String suffix;
  private EffectTable effects;
  private JdbcIdempotency idem;
  private final AtomicInteger invocations = new AtomicInteger();

  /** @return the database under test; connections it opens wait for locks (see {@link JdbcTarget}) */
  protected abstract JdbcTarget target();

  /**
   * @return the write order under test; {@link JdbcIdempotency.Strategy#CLAIM_FIRST} (the default)
   *     unless a subclass runs the contract for another
   */
  protected JdbcIdempotency.Strategy strategy() {
    return JdbcIdempotency.Strategy.CLAIM_FIRST;
  }

  private JdbcIdempotency.Builder builder() {
    return JdbcIdempotency.builder().strategy(strategy());
  }

  @BeforeEach
  void createTables() throws SQLException {
    suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    effects = new EffectTable("effects_" + suffix);
    idem = builder().table("keys_" + suffix).build();
    try (Connection c = target().open()) {
      effects.recreate(c);
    }
  }

  @AfterEach
  void dropTables() throws SQLException {
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + effects.name());
      st.execute("DROP TABLE IF EXISTS " + idem.table());
    }
  }

  // ---------------------------------------------------------------- the four lab scenarios

  @Test
  void lostResponseRetryReplaysTheFirstResultAndStoresOneEffect() throws Exception {
    IdempotentRequest request = request("alice", "k-lost", "{\"value\":42}");
    long first;
    try (Connection c = target().open()) {
      Outcome outcome = create(c, request, "{\"value\":42}");
      first = idOf(outcome);
      assertThat(outcome.replayed()).isFalse();
      // the response is lost here, after the commit; the caller retries with the same key
    }
    try (Connection c = target().open()) {
      Outcome retry = create(c, request, "{\"value\":42}");
      assertThat(retry.replayed()).isTrue();
      assertThat(idOf(retry)).isEqualTo(first);
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void concurrentDuplicatesProduceExactlyOneEffectAndEveryCallerGetsItsId() throws Exception {
    IdempotentRequest request = request("alice", "k-race", "{\"value\":42}");
    List<Outcome> outcomes = race(RACERS, c -> create(c, request, "{\"value\":42}"));
    assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
    assertThat(outcomes).filteredOn(o -> !o.replayed()).hasSize(1);
    assertThat(effectCount()).isEqualTo(1);
    if (strategy() == JdbcIdempotency.Strategy.CLAIM_FIRST) {
      assertThat(invocations).as("claim-first: duplicates wait on the claim, the effect runs once").hasValue(1);
    } else {
      // key-last: racing duplicates may run the effect; every run but one was rolled back
      assertThat(invocations.get()).isBetween(1, RACERS);
    }
  }

  /**
   * An effect with a unique constraint of its own: under key-last a racing duplicate's effect fails
   * on the winner's row before it reaches the key; it must still get the winner's response.
   */
  @Test
  void concurrentDuplicatesWhoseEffectHasItsOwnUniqueConstraintStillReplay() throws Exception {
    String unique = "uniq_" + suffix;
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + unique + " (name VARCHAR(100) PRIMARY KEY)");
    }
    IdempotentRequest request = request("alice", "k-unique", "{\"name\":\"x\"}");
    try {
      List<Outcome> outcomes = race(8, c -> idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + unique + " (name) VALUES ('x')")) {
          ps.executeUpdate();
        }
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(100);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
      assertThat(outcomes).filteredOn(o -> !o.replayed()).hasSize(1);
    } finally {
      try (Connection c = target().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + unique);
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * Regression: on PostgreSQL a handler whose INSERT hit a unique violation, caught it and answered
   * {@code 409 email already registered} failed every attempt with "current transaction is aborted"
   * (25P02), which HTTP reported as 503 store-unavailable. Its answer must reach the caller and be
   * stored on every database, in a transaction Idem owns and in the caller's.
   */
  @Test
  void aHandlerThatCatchesItsOwnUniqueViolationAnswersAndItsAnswerIsStored() throws Exception {
    String users = "users_" + suffix;
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      if (Dialect.detect(c).ddlCommitsTransaction()) {
        idem.createSchema(c); // MySQL's and H2's DDL would commit the caller's transaction below
      }
    }
    try (Connection c = target().open()) {
      for (boolean callersTransaction : new boolean[] {false, true}) {
        IdempotentRequest request = request("alice", "k-signup-" + callersTransaction, "{\"email\":\"ann@example.com\"}");
        c.setAutoCommit(!callersTransaction);
        Outcome first = idem.execute(c, request, connCtx -> register(connCtx.connection(), users, "ann@example.com"));
        Outcome again = idem.execute(c, request, conn -> {
          throw new AssertionError("a stored answer must be replayed, not run again");
        });
        if (callersTransaction) {
          c.commit();
          c.setAutoCommit(true);
        }
        String what = callersTransaction ? "in the caller's transaction" : "in Idem's transaction";
        assertThat(first.replayed()).as(what).isFalse();
        assertThat(first.stored()).as(what).isTrue();
        assertThat(first.response().status()).as(what).isEqualTo(409);
        assertThat(first.response().bodyAsString()).as(what).isEqualTo("email already registered");
        assertThat(again.replayed()).as(what).isTrue();
        assertThat(again.response().status()).as(what).isEqualTo(409);
      }
      assertThat(recordCount(c)).isEqualTo(2);
    } finally {
      try (Connection c = target().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }

  /**
   * The same handler, answering its own failure (a 503 of its own) after the caught error: the
   * caller gets that answer, never a store failure, and nothing is stored.
   */
  @Test
  void aHandlersOwnFailureAnswerAfterACaughtSqlErrorIsReturnedAsItIs() throws Exception {
    String users = "users_" + suffix;
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      idem.createSchema(c);
    }
    try (Connection c = target().open()) {
      for (boolean callersTransaction : new boolean[] {false, true}) {
        IdempotentRequest request = request("alice", "k-busy-" + callersTransaction, "{}");
        c.setAutoCommit(!callersTransaction);
        Outcome outcome = idem.execute(c, request, connCtx -> {
          Connection conn = connCtx.connection();
          try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + users + " (email) VALUES ('ann@example.com')")) {
            ps.executeUpdate();
            return StoredResponse.of(201, "created");
          } catch (SQLException e) {
            return StoredResponse.of(503, "our own outage page");
          }
        });
        if (callersTransaction) {
          c.rollback(); // a released answer: the caller rolls its transaction back
          c.setAutoCommit(true);
        }
        assertThat(outcome.response().status()).isEqualTo(503);
        assertThat(outcome.response().bodyAsString()).isEqualTo("our own outage page");
        assertThat(outcome.stored()).isFalse();
      }
      assertThat(recordCount(c)).isZero();
    } finally {
      try (Connection c = target().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }

  /**
   * A handler that answers success after catching an SQL error: on PostgreSQL the error aborted
   * its transaction, so its writes cannot commit and a 201 would describe an effect that did not
   * happen: refused, nothing stored, the key free for a retry. Elsewhere the failed statement alone
   * was undone, and the answer is stored with the rest of the effect.
   */
  @Test
  void aSuccessAnswerAfterACaughtSqlErrorIsStoredOnlyWhereItsWritesCommit() throws Exception {
    String users = "users_" + suffix;
    IdempotentRequest request = request("alice", "k-swallow", "{}");
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      Effect swallowing = ctx -> {
        Connection conn = ctx.connection();
        long id = effects.insert(conn, "t", "{}");
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + users + " (email) VALUES ('ann@example.com')")) {
          ps.executeUpdate();
        } catch (SQLException ignored) {
          // the handler's bug: it carries on as if nothing happened
        }
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      };
      if (Dialect.detect(c).abortsTransactionOnError()) {
        assertThatThrownBy(() -> idem.execute(c, request, swallowing))
            .isInstanceOf(EffectFailedException.class)
            .hasMessageContaining("aborted");
        assertThat(recordCount(c)).isZero();
        assertThat(effectCount()).isZero();
      } else {
        Outcome outcome = idem.execute(c, request, swallowing);
        assertThat(outcome.stored()).isTrue();
        assertThat(effectCount()).isEqualTo(1);
      }
      assertThat(c.getAutoCommit()).isTrue();
    } finally {
      try (Connection c = target().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }

  /**
   * A caller's transaction that an SQL error of the caller's own aborted before Idem ran
   * (PostgreSQL): Idem's lookup fails, and that is the caller's error, never reported as a store
   * outage ("retry later").
   */
  @Test
  void aCallersTransactionAbortedBeforeIdemRunsIsTheCallersErrorNotAStoreOutage() throws Exception {
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      Assumptions.assumeTrue(Dialect.detect(c).abortsTransactionOnError(), "only PostgreSQL aborts a transaction on an error");
      idem.createSchema(c);
      c.setAutoCommit(false);
      try {
        st.execute("SELECT 1/0");
      } catch (SQLException expected) {
        // the caller's own error: the transaction is aborted now
      }
      assertThatThrownBy(() -> create(c, request("alice", "k-aborted", "{}"), "{}"))
          .isInstanceOf(IllegalStateException.class)
          .isNotInstanceOf(IdemStoreException.class)
          .hasMessageContaining("already aborted");
      c.rollback();
      c.setAutoCommit(true);
    }
    assertThat(invocations).hasValue(0);
  }

  /** Registers an e-mail address; a taken one is the handler's own answer, 409. */
  private static StoredResponse register(Connection conn, String users, String email) {
    try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + users + " (email) VALUES (?)")) {
      ps.setString(1, email);
      ps.executeUpdate();
      return StoredResponse.of(201, "registered");
    } catch (SQLException e) {
      return StoredResponse.of(409, "email already registered");
    }
  }

  /**
   * Regression: under key-last, racing duplicates whose effect reads with a lock before it writes
   * (MariaDB's gap locks under REPEATABLE READ) deadlock each other; the victims got an
   * EffectFailedException instead of the winner's response.
   */
  @Test
  void racingDuplicatesWhoseEffectsDeadlockStillAllGetTheWinnersAnswer() throws Exception {
    try (Connection c = target().open()) {
      Assumptions.assumeTrue(Dialect.detect(c).supportsSelectForUpdate(), "SQLite has no SELECT ... FOR UPDATE");
    }
    IdempotentRequest request = request("alice", "k-deadlock", "{}");
    List<Outcome> outcomes = race(8, c -> idem.execute(c, request, connCtx -> {
      Connection conn = connCtx.connection();
      try (PreparedStatement ps = conn.prepareStatement("SELECT id FROM " + effects.name() + " WHERE tag = ? FOR UPDATE")) {
        ps.setString(1, "t");
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return StoredResponse.of(200, "{\"id\":" + rs.getLong(1) + "}");
          }
        }
      }
      Thread.sleep(50);
      long id = effects.insert(conn, "t", "{}");
      return StoredResponse.of(201, "{\"id\":" + id + "}");
    }));
    assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
    assertThat(outcomes).filteredOn(o -> !o.replayed()).hasSize(1);
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * Regression: under SERIALIZABLE, creates of distinct keys whose effects read what the others
   * write fail with serialization failures (SQLState 40001), at the effect or at the COMMIT; the
   * COMMIT case was reported as "outcome unknown" although the database had rolled it all back.
   */
  @Test
  void concurrentCreatesOfDistinctKeysUnderSerializableAllSucceedOnce() throws Exception {
    try (Connection c = target().open()) {
      Assumptions.assumeTrue(!Dialect.detect(c).serializesWriters(), "SQLite transactions are serializable one at a time");
    }
    AtomicInteger next = new AtomicInteger();
    // Four racers: PostgreSQL lets at least one of the conflicting transactions commit per round,
    // so four finish within Idem's five rounds whatever the interleaving.
    List<Outcome> outcomes = race(4, c -> {
      c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      String key = "k-serializable-" + next.incrementAndGet();
      return idem.execute(c, request("alice", key, "{}"), connCtx -> {
        Connection conn = connCtx.connection();
        try (PreparedStatement ps = conn.prepareStatement("SELECT COUNT(*) FROM " + effects.name() + " WHERE tag = ?")) {
          ps.setString(1, "t");
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
          }
        }
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(20);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      });
    });
    assertThat(outcomes).noneMatch(Outcome::replayed);
    assertThat(outcomes).extracting(TransactionalContract::idOf).doesNotHaveDuplicates();
    assertThat(effectCount()).isEqualTo(4);
  }

  @Test
  void theEffectSeesAnOpenTransactionAndTheCallerGetsAutoCommitBack() throws Exception {
    try (Connection c = target().open()) {
      boolean[] effectAutoCommit = {true};
      idem.execute(c, request("alice", "k-autocommit", "{}"), connCtx -> {
        Connection conn = connCtx.connection();
        effectAutoCommit[0] = conn.getAutoCommit();
        return StoredResponse.of(201, "{\"id\":" + effects.insert(conn, "t", "{}") + "}");
      });
      assertThat(effectAutoCommit[0]).as("auto-commit as the effect sees it").isFalse();
      assertThat(c.getAutoCommit()).as("auto-commit restored").isTrue();
      // the connection is really back in auto-commit: a write outside Idem is visible elsewhere
      effects.insert(c, "outside", "{}");
      try (Connection other = target().open()) {
        assertThat(effects.count(other, "outside")).isEqualTo(1);
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void replayAnswersACompletedKeyWithoutRunningAnythingAndIsEmptyForANewKey() throws Exception {
    IdempotentRequest request = request("alice", "k-replay-only", "{\"value\":1}");
    try (Connection c = target().open()) {
      assertThat(idem.replay(c, request)).isEmpty();
      Outcome first = create(c, request, "{\"value\":1}");
      Outcome replayed = idem.replay(c, request).orElseThrow();
      assertThat(replayed.replayed()).isTrue();
      assertThat(idOf(replayed)).isEqualTo(idOf(first));
      assertThatThrownBy(() -> idem.replay(c, request("alice", "k-replay-only", "{\"value\":2}")))
          .isInstanceOf(IdempotencyKeyReusedException.class);
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void releaseInsideTheCallersTransactionKeepsTheEffectAndForgetsTheKey() throws Exception {
    IdempotentRequest request = request("alice", "k-release", "{}");
    try (Connection c = target().open()) {
      idem.createSchema(c);
      c.setAutoCommit(false);
      create(c, request, "{}");
      assertThat(idem.release(c, request)).isTrue();
      c.commit();
      c.setAutoCommit(true);
      assertThat(idem.replay(c, request)).as("no record: a retry runs again").isEmpty();
      assertThat(create(c, request, "{}").replayed()).isFalse();
    }
    assertThat(effectCount()).as("the released run's effect was kept, and the retry made one more").isEqualTo(2);
  }

  /**
   * Regression: on SQLite an effect that set a savepoint (allowed) left the driver's auto-commit
   * flag off, so the next call took the connection for a caller's transaction, and an effect that
   * failed there committed its partial work and an orphaned claim: a retry made a second effect.
   */
  @Test
  void anEffectThatUsesASavepointLeavesTheConnectionInAutoCommit() throws Exception {
    try (Connection c = target().open()) {
      idem.execute(c, request("alice", "k-savepoint", "{}"), connCtx -> {
        Connection conn = connCtx.connection();
        Savepoint savepoint = conn.setSavepoint();
        effects.insert(conn, "t", "{}");
        conn.releaseSavepoint(savepoint);
        return StoredResponse.of(201, "{}");
      });
      assertThat(c.getAutoCommit()).as("auto-commit after a savepoint in the effect").isTrue();
      IdempotentRequest next = request("alice", "k-after-savepoint", "{}");
      assertThatThrownBy(() -> idem.execute(c, next, connCtx -> {
        Connection conn = connCtx.connection();
        effects.insert(conn, "t", "{}");
        throw new IllegalStateException("fails after its insert");
      })).isInstanceOf(IllegalStateException.class);
      assertThat(idem.replay(c, next)).isEmpty();
    }
    assertThat(effectCount()).as("the failed effect's insert rolled back").isEqualTo(1);
  }

  @Test
  void keyReusedWithAnotherPayloadIsRejectedAndStoresNothingMore() throws Exception {
    try (Connection c = target().open()) {
      create(c, request("alice", "k-reuse", "{\"value\":42}"), "{\"value\":42}");
      IdempotentRequest other = request("alice", "k-reuse", "{\"value\":43}");
      assertThatThrownBy(() -> create(c, other, "{\"value\":43}"))
          .isInstanceOf(IdempotencyKeyReusedException.class)
          .hasMessageContaining("k-reuse");
      assertThat(c.getAutoCommit()).as("auto-commit restored").isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void distinctKeysWithIdenticalPayloadsAreTwoOperations() throws Exception {
    try (Connection c = target().open()) {
      Outcome a = create(c, request("alice", "k-1", "{\"value\":42}"), "{\"value\":42}");
      Outcome b = create(c, request("alice", "k-2", "{\"value\":42}"), "{\"value\":42}");
      assertThat(idOf(a)).isNotEqualTo(idOf(b));
      assertThat(a.replayed()).isFalse();
      assertThat(b.replayed()).isFalse();
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  // ---------------------------------------------------------------- the rest of the contract

  @Test
  void sameKeyInAnotherScopeIsUnrelated() throws Exception {
    try (Connection c = target().open()) {
      Outcome alice = create(c, request("alice", "shared-key", "{\"value\":42}"), "{\"value\":42}");
      Outcome bob = create(c, request("bob", "shared-key", "{\"value\":42}"), "{\"value\":42}");
      assertThat(bob.replayed()).isFalse();
      assertThat(idOf(bob)).isNotEqualTo(idOf(alice));
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  /**
   * Regression: on MariaDB the key {@code "pad-k1 "} was answered as {@code "pad-k1"} (a 422, or with
   * the same body a replay of the other key's response), and a principal with a trailing space got
   * another tenant's stored response: PAD SPACE collations ({@code utf8mb4_bin} and {@code ascii_bin}
   * too) ignore trailing spaces. Every part of the record's identity must compare byte for byte.
   */
  @Test
  void keysAndPrincipalsThatDifferOnlyByTrailingSpacesCaseOrUnicodeNormalisationAreDistinct() throws Exception {
    List<IdempotentRequest> requests = new ArrayList<>();
    for (String key : new String[] {"pad-k1", "pad-k1 ", "pad-k1  ", "PAD-K1", "Pad-k1"}) {
      requests.add(request(Scope.of("tenant", "POST /things"), key, "{}"));
    }
    // "café" in NFC (U+00E9) and NFD (e + U+0301), a trailing space, another case
    for (String principal : new String[] {"tenant ", "Tenant", "TENANT", "caf\u00e9", "cafe\u0301", "caf\u00e9 "}) {
      requests.add(request(Scope.of(principal, "POST /things"), "pad-k1", "{}"));
    }
    for (String operation : new String[] {"POST /things ", "post /things", "POST /Things", "POST /caf\u00e9", "POST /cafe\u0301"}) {
      requests.add(request(Scope.of("tenant", operation), "pad-k1", "{}"));
    }
    List<Long> ids = new ArrayList<>();
    try (Connection c = target().open()) {
      for (IdempotentRequest r : requests) {
        Outcome outcome = create(c, r, "{}");
        assertThat(outcome.replayed()).as("%s executes", describe(r)).isFalse();
        ids.add(idOf(outcome));
      }
      for (int i = 0; i < requests.size(); i++) {
        Outcome again = create(c, requests.get(i), "{}");
        assertThat(again.replayed()).as("%s replays", describe(requests.get(i))).isTrue();
        assertThat(idOf(again)).as("%s replays its own response", describe(requests.get(i))).isEqualTo(ids.get(i));
      }
      assertThat(recordCount(c)).isEqualTo(requests.size());
    }
    assertThat(ids).doesNotHaveDuplicates();
    assertThat(effectCount()).isEqualTo(requests.size());
  }

  /**
   * Regression: a key table created by an earlier version (MariaDB: character columns with PAD
   * SPACE collations) was used as it was; it is now refused at first use with the column and the
   * statement that migrates it, and the migrated table tells {@code "k1 "} from {@code "k1"}.
   */
  @Test
  void aKeyTableThatComparesKeysLooselyIsRefusedWithItsMigrationStatement() throws Exception {
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      Dialect dialect = Dialect.detect(c);
      String looseTemplate = LooseKeyTables.of(dialect);
      Assumptions.assumeTrue(looseTemplate != null, "no loose key table is known for " + dialect.name());
      String loose = looseTemplate.replace("#TABLE#", idem.table());
      st.execute(loose);
      IdempotentRequest request = request("alice", "k1", "{}");
      IdemStoreException refused = Assertions.catchThrowableOfType(
          () -> create(c, request, "{}"), IdemStoreException.class);
      assertThat(refused).as("a loose table is refused").isNotNull();
      assertThat(refused.getMessage()).contains(idem.table()).contains("idem_key");
      assertThat(effectCount()).as("nothing ran").isZero();
      assertThatThrownBy(() -> idem.createSchema(c)).isInstanceOf(IdemStoreException.class).hasMessageContaining("idem_key");
      if (!dialect.keyTableMigration(idem.table()).startsWith("ALTER TABLE")) {
        // SQLite: no statement migrates a column's collation; the message says what to do instead
        assertThat(refused.getMessage()).contains(dialect.keyTableMigration(idem.table()));
        return;
      }
      String message = refused.getMessage();
      String migration = message.substring(message.indexOf("ALTER TABLE"));
      st.execute(migration);
      JdbcIdempotency migrated = builder().table(idem.table()).build();
      Outcome plain = migrated.execute(c, request, conn -> StoredResponse.of(201, "{\"id\":1}"));
      Outcome padded = migrated.execute(c, request("alice", "k1 ", "{}"), conn -> StoredResponse.of(201, "{\"id\":2}"));
      assertThat(plain.replayed()).isFalse();
      assertThat(padded.replayed()).as("after the migration \"k1 \" is another key").isFalse();
    }
  }

  @Test
  void jsonPayloadsThatDifferOnlyInMemberOrderAreTheSameOperation() throws Exception {
    try (Connection c = target().open()) {
      create(c, request("alice", "k-order", "{\"a\":1,\"b\":2}"), "{\"a\":1,\"b\":2}");
      Outcome retry = create(c, request("alice", "k-order", "{ \"b\": 2, \"a\": 1 }"), "{\"a\":1,\"b\":2}");
      assertThat(retry.replayed()).isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void replayReturnsTheStoredResponseByteForByte() throws Exception {
    StoredResponse original =
        StoredResponse.builder(201)
            .header("Content-Type", "application/json")
            .header("Location", "/notes/7")
            .header("ETag", "\"v1\"")
            .body(new byte[] {0, 1, 2, (byte) 0xFF, '{', '}'})
            .build();
    IdempotentRequest request = request("alice", "k-bytes", "{}");
    try (Connection c = target().open()) {
      idem.execute(c, request, conn -> original);
      Outcome replay = idem.execute(c, request, conn -> {
        throw new AssertionError("a replay must not run the effect");
      });
      assertThat(replay.replayed()).isTrue();
      assertThat(replay.response()).isEqualTo(original);
      assertThat(replay.response().body()).containsExactly(original.body());
      assertThat(replay.response().header("etag")).isEqualTo("\"v1\"");
    }
  }

  /**
   * A response as large as the HTTP filter stores by default, with bytes a driver's text protocol
   * must escape, commits with its key and is read back byte for byte.
   */
  @Test
  void aLargeStoredResponseRoundTripsByteExact() throws Exception {
    StoredResponse large = LargeResponses.of(LargeResponses.DEFAULT_LIMIT);
    IdempotentRequest request = request("alice", "k-large", "{}");
    try (Connection c = target().open()) {
      Outcome first = idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        effects.insert(conn, "t", "{}");
        return large;
      });
      assertThat(first.stored()).isTrue();
      Outcome replay = idem.execute(c, request, conn -> {
        throw new AssertionError("a replay must not run the effect");
      });
      assertThat(replay.replayed()).isTrue();
      assertThat(replay.response().bodyLength()).isEqualTo(LargeResponses.DEFAULT_LIMIT);
      assertThat(replay.response().body()).as("byte for byte").isEqualTo(large.body());
      assertThat(replay.response()).isEqualTo(large);
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * The record of an answer too large to store (status and header fields, the body's length, no
   * body) commits with the effect and keeps the key completed: a retry runs nothing.
   */
  @Test
  void aResponseWhoseBodyWasNotStoredKeepsTheKeyCompleted() throws Exception {
    StoredResponse record = StoredResponse.builder(201).header("Location", "/files/9").bodyNotStored(2L * 1024 * 1024).build();
    IdempotentRequest request = request("alice", "k-not-stored", "{}");
    try (Connection c = target().open()) {
      Outcome first = idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        effects.insert(conn, "t", "{}");
        return record;
      });
      assertThat(first.stored()).isTrue();
      Outcome retry = idem.execute(c, request, conn -> {
        throw new AssertionError("a key whose answer was not stored must not run again");
      });
      assertThat(retry.replayed()).isTrue();
      assertThat(retry.response().bodyStored()).isFalse();
      assertThat(retry.response().status()).isEqualTo(201);
      assertThat(retry.response().answeredBodyLength()).isEqualTo(2L * 1024 * 1024);
      assertThat(retry.response().header("Location")).isEqualTo("/files/9");
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void aStoredClientErrorIsReplayedAsThatStatus() throws Exception {
    IdempotentRequest request = request("alice", "k-404", "{}");
    try (Connection c = target().open()) {
      idem.execute(c, request, conn -> StoredResponse.of(404, "no such account"));
      Outcome replay = idem.execute(c, request, conn -> StoredResponse.of(200, "must not run"));
      assertThat(replay.response().status()).isEqualTo(404);
      assertThat(replay.response().bodyAsString()).isEqualTo("no such account");
    }
  }

  @Test
  void aTransientFailureResponseIsReleasedWithItsEffectSoARetryRunsAgain() throws Exception {
    IdempotentRequest request = request("alice", "k-503", "{}");
    try (Connection c = target().open()) {
      for (int status : new int[] {503, 500, 429}) {
        Outcome failed = idem.execute(c, request, connCtx -> {
          Connection conn = connCtx.connection();
          effects.insert(conn, "t", "{}");
          return StoredResponse.of(status, "try later");
        });
        assertThat(failed.stored()).as("status %d", status).isFalse();
        assertThat(failed.response().status()).isEqualTo(status);
        assertThat(recordCount(c)).isZero();
      }
      assertThat(effectCount()).as("each released response took its effect with it").isZero();
      Outcome retry = create(c, request, "{}");
      assertThat(retry.replayed()).isFalse();
      assertThat(retry.stored()).isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void anEffectThatThrowsRollsBackTheEffectAndTheClaimSoARetryRunsAgain() throws Exception {
    IdempotentRequest request = request("alice", "k-fail", "{\"value\":42}");
    try (Connection c = target().open()) {
      assertThatThrownBy(() -> idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{\"value\":42}");
            throw new IllegalStateException("payment declined by a bug");
          }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("payment declined by a bug");
      assertThat(effectCount()).isZero();
      assertThat(recordCount(c)).isZero();
      assertThat(c.getAutoCommit()).isTrue();

      Outcome retry = create(c, request, "{\"value\":42}");
      assertThat(retry.replayed()).isFalse();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void aCheckedExceptionFromTheEffectIsWrappedAndRolledBack() throws Exception {
    try (Connection c = target().open()) {
      assertThatThrownBy(() -> idem.execute(c, request("alice", "k-checked", "{}"), connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{}");
            throw new IOException("disk full");
          }))
          .isInstanceOf(EffectFailedException.class)
          .hasCauseInstanceOf(IOException.class);
      assertThat(recordCount(c)).isZero();
    }
    assertThat(effectCount()).isZero();
  }

  @Test
  void anEffectThatReturnsNullIsAProgrammingErrorAndLeavesNothing() throws Exception {
    try (Connection c = target().open()) {
      assertThatThrownBy(() -> idem.execute(c, request("alice", "k-null", "{}"), connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{}");
            return null;
          }))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("returned null");
      assertThat(recordCount(c)).isZero();
    }
    assertThat(effectCount()).isZero();
  }

  @Test
  void anExpiredRecordCountsAsAbsent() throws Exception {
    IdempotentRequest request = request("alice", "k-expired", "{\"value\":42}");
    try (Connection c = target().open()) {
      long first = idOf(create(c, request, "{\"value\":42}"));
      try (Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE " + idem.table() + " SET expires_at = expires_at - 100000000000");
      }
      Outcome again = create(c, request, "{\"value\":42}");
      assertThat(again.replayed()).isFalse();
      assertThat(idOf(again)).isNotEqualTo(first);
      assertThat(recordCount(c)).isEqualTo(1);
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  // ---------------------------------------------------------------- key status

  @Test
  void theKeyStatusIsAbsentThenCompletedWithTheStoredStatusAndItsTimes() throws Exception {
    IdempotentRequest request = request("alice", "k-status", "{\"value\":42}");
    try (Connection c = target().open()) {
      assertThat(idem.status(c, request.scope(), request.key())).isEqualTo(KeyStatus.absent());
      create(c, request, "{\"value\":42}");
      KeyStatus status = idem.status(c, request.scope(), request.key());
      assertThat(status).isInstanceOf(KeyStatus.Completed.class);
      KeyStatus.Completed completed = (KeyStatus.Completed) status;
      assertThat(completed.status()).isEqualTo(201);
      assertThat(completed.fingerprint()).isEqualTo(request.fingerprint());
      assertThat(completed.completedAt()).isNotNull();
      // kept at least the retention after completion, at most the claim's margin longer
      assertThat(Duration.between(completed.completedAt(), completed.expiresAt()))
          .isGreaterThanOrEqualTo(idem.retention()).isLessThanOrEqualTo(idem.retention().plus(JdbcIdempotency.EXPIRY_MARGIN));
      assertThat(idem.status(c, Scope.of("bob", "POST /things"), request.key())).as("another principal's key").isEqualTo(KeyStatus.absent());
      assertThat(idem.status(c, Scope.of("alice", "POST /other"), request.key())).as("another operation's key").isEqualTo(KeyStatus.absent());
    }
    assertThat(invocations).as("reading a status runs nothing").hasValue(1);
  }

  @Test
  void aStoredClientErrorReadsAsCompletedWithThatStatus() throws Exception {
    IdempotentRequest request = request("alice", "k-status-422", "{}");
    try (Connection c = target().open()) {
      idem.execute(c, request, conn -> StoredResponse.of(422, "{\"error\":\"invalid\"}"));
      assertThat(((KeyStatus.Completed) idem.status(c, request.scope(), request.key())).status()).isEqualTo(422);
    }
  }

  @Test
  void anExpiredKeyAndAnOrphanedClaimReadAsAbsent() throws Exception {
    IdempotentRequest expired = request("alice", "k-status-expired", "{}");
    IdempotentRequest orphan = request("alice", "k-status-orphan", "{}");
    try (Connection c = target().open()) {
      create(c, expired, "{}");
      try (Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE " + idem.table() + " SET expires_at = expires_at - 100000000000");
      }
      assertThat(idem.status(c, expired.scope(), expired.key())).isEqualTo(KeyStatus.absent());
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO " + idem.table() + " (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
              + " VALUES (?, ?, ?, ?, 'IN_PROGRESS', 0, 9000000000000)")) {
        ps.setString(1, orphan.scope().principal());
        ps.setString(2, orphan.scope().operation());
        ps.setString(3, orphan.key().value());
        ps.setString(4, orphan.fingerprint().hex());
        ps.executeUpdate();
      }
      assertThat(idem.status(c, orphan.scope(), orphan.key())).as("a claim a broken transaction left").isEqualTo(KeyStatus.absent());
    }
  }

  /**
   * A transactional claim is invisible before its commit: the status of a running operation reads
   * as absent, and the read neither waits for the claim's lock nor takes one.
   */
  @Test
  void theStatusOfARunningTransactionalOperationIsReadWithoutWaitingForItsClaim() throws Exception {
    IdempotentRequest request = request("alice", "k-status-running", "{}");
    try (Connection c = target().open()) {
      idem.createSchema(c);
    }
    CountDownLatch inEffect = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<Outcome> running = pool.submit(() -> {
        try (Connection c = target().open()) {
          return idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            long id = effects.insert(conn, "t", "{}");
            inEffect.countDown();
            finish.await(30, TimeUnit.SECONDS);
            return StoredResponse.of(201, "{\"id\":" + id + "}");
          });
        }
      });
      assertThat(inEffect.await(30, TimeUnit.SECONDS)).isTrue();
      ExecutorService reader = Executors.newSingleThreadExecutor();
      try {
        Future<KeyStatus> read = reader.submit(() -> {
          try (Connection c = target().open()) {
            return idem.status(c, request.scope(), request.key());
          }
        });
        assertThat(read.get(10, TimeUnit.SECONDS)).isEqualTo(KeyStatus.absent());
      } finally {
        reader.shutdownNow();
      }
      finish.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).replayed()).isFalse();
    } finally {
      finish.countDown();
      pool.shutdownNow();
    }
    try (Connection c = target().open()) {
      assertThat(idem.status(c, request.scope(), request.key())).isInstanceOf(KeyStatus.Completed.class);
    }
  }

  @Test
  void aLeaseModeClaimInTheSameTableReadsAsInProgressWithItsLease() throws Exception {
    try (Connection c = target().open()) {
      idem.createSchema(c);
    }
    JdbcLeaseStore leases = JdbcLeaseStore.builder(target().dataSource()).table(idem.table()).build();
    IdempotentRequest request = request("alice", "k-status-lease", "{}");
    leases.claim(request, "owner-1", Duration.ofSeconds(30), Duration.ofMinutes(5));
    for (KeyStatusReader reader : List.<KeyStatusReader>of(leases, builder().table(idem.table()).dataSource(target().dataSource()).build())) {
      KeyStatus status = reader.status(request.scope(), request.key());
      assertThat(status).isInstanceOf(KeyStatus.InProgress.class);
      KeyStatus.InProgress inProgress = (KeyStatus.InProgress) status;
      assertThat(inProgress.leaseRemaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(30));
      assertThat(inProgress.fingerprint()).isEqualTo(request.fingerprint());
    }
  }

  @Test
  void theStatusOfAProtectedResponseIsReadAndAnUnreadableOneIsRefused() throws Exception {
    IdempotentRequest request = request("alice", "k-status-secret", "{}");
    createSecret(protectedBy(KEY_A), request, "s");
    try (Connection c = target().open()) {
      assertThat(((KeyStatus.Completed) protectedBy(KEY_A).status(c, request.scope(), request.key())).status()).isEqualTo(201);
      assertThatThrownBy(() -> protectedBy(ONLY_KEY_B).status(c, request.scope(), request.key()))
          .isInstanceOf(StoredResponseUnreadableException.class);
    }
  }

  @Test
  void purgeRemovesOnlyExpiredRecordsInBatches() throws Exception {
    try (Connection c = target().open()) {
      for (int i = 0; i < 7; i++) {
        create(c, request("alice", "k-purge-" + i, "{}"), "{}");
      }
      try (Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE " + idem.table() + " SET expires_at = 0 WHERE idem_key <> 'k-purge-6'");
      }
      assertThat(idem.purgeExpired(c, 2)).isEqualTo(6);
      assertThat(recordCount(c)).isEqualTo(1);
      assertThat(idem.purgeExpired(c, 2)).isZero();
      assertThat(create(c, request("alice", "k-purge-6", "{}"), "{}").replayed()).as("the live record was kept").isTrue();
    }
  }

  @Test
  void aJoinedTransactionIsCommittedOrRolledBackByTheCaller() throws Exception {
    IdempotentRequest request = request("alice", "k-joined", "{\"value\":42}");
    try (Connection c = target().open()) {
      if (Dialect.detect(c).ddlCommitsTransaction()) {
        idem.createSchema(c); // MySQL's and H2's DDL would commit the open transaction, so the table comes first
      }
      c.setAutoCommit(false);
      Outcome outcome = create(c, request, "{\"value\":42}");
      assertThat(outcome.replayed()).isFalse();
      c.rollback();
      c.setAutoCommit(true);
    }
    assertThat(effectCount()).as("the caller's rollback removed the effect").isZero();
    try (Connection c = target().open()) {
      Outcome retry = create(c, request, "{\"value\":42}");
      assertThat(retry.replayed()).as("and the claim with it").isFalse();
      c.setAutoCommit(false);
      Outcome replay = create(c, request, "{\"value\":42}");
      assertThat(replay.replayed()).as("a joined transaction replays too").isTrue();
      c.commit();
      c.setAutoCommit(true);
      assertThat(recordCount(c)).isEqualTo(1);
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void schemaCreatedInsideARolledBackJoinedTransactionIsCreatedAgain() throws Exception {
    IdempotentRequest request = request("alice", "k-ddl", "{}");
    try (Connection c = target().open()) {
      c.setAutoCommit(false);
      if (Dialect.detect(c).ddlCommitsTransaction()) {
        assertThatThrownBy(() -> create(c, request, "{}"))
            .isInstanceOf(IdemStoreException.class)
            .hasMessageContaining("does not exist")
            .hasMessageContaining("commit the caller's open transaction");
        c.rollback();
        c.setAutoCommit(true);
        assertThat(create(c, request, "{}").replayed()).isFalse();
        assertThat(recordCount(c)).isEqualTo(1);
        return;
      }
      create(c, request, "{}");
      c.rollback();
      c.setAutoCommit(true);
      Outcome outcome = create(c, request, "{}");
      assertThat(outcome.replayed()).isFalse();
      assertThat(recordCount(c)).isEqualTo(1);
    }
  }

  @Test
  void anEffectThatCommitsOnItsOwnIsRefusedAndLeavesNoHalfWrittenRecord() throws Exception {
    IdempotentRequest request = request("alice", "k-self-commit", "{}");
    try (Connection c = target().open()) {
      assertThatThrownBy(() -> idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            effects.insert(conn, "t", "{}");
            conn.commit();
            throw new IllegalStateException("effect fails after its own commit");
          }))
          .isInstanceOf(EffectFailedException.class)
          .hasMessageContaining("must not call commit()");
      assertThatThrownBy(() -> idem.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            conn.setAutoCommit(true);
            return StoredResponse.of(201, "{}");
          }))
          .isInstanceOf(EffectFailedException.class)
          .hasMessageContaining("must not call setAutoCommit()");
      assertThat(recordCount(c)).isZero();
      assertThat(c.getAutoCommit()).isTrue();
      assertThat(create(c, request, "{}").replayed()).as("the retry executes").isFalse();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void anOrphanedClaimLeftByABrokenTransactionIsTakenOverNotReportedInProgress() throws Exception {
    IdempotentRequest request = request("alice", "k-orphan", "{}");
    try (Connection c = target().open()) {
      idem.createSchema(c);
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO " + idem.table() + " (principal, operation, idem_key, fingerprint, state, created_at, expires_at)"
              + " VALUES (?, ?, ?, ?, 'IN_PROGRESS', 0, 9000000000000)")) {
        ps.setString(1, request.scope().principal());
        ps.setString(2, request.scope().operation());
        ps.setString(3, request.key().value());
        ps.setString(4, request.fingerprint().hex());
        ps.executeUpdate();
      }
      Outcome outcome = create(c, request, "{}");
      assertThat(outcome.replayed()).isFalse();
      assertThat(create(c, request, "{}").replayed()).isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void retentionCountsFromCompletionSoASlowEffectStillDeduplicatesItsWaiters() throws Exception {
    // Claim-first: a retention shorter than the effect, to show it counts from completion. Key-last
    // writes the record at completion anyway, and documents that a transaction must end within the
    // retention of a racing winner's record, so it gets a retention longer than the effect.
    Duration retention = Duration.ofSeconds(strategy() == JdbcIdempotency.Strategy.KEY_LAST ? 5 : 1);
    JdbcIdempotency shortLived = builder().table(idem.table()).retention(retention).build();
    IdempotentRequest request = request("alice", "k-slow", "{}");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      CountDownLatch claimed = new CountDownLatch(1);
      Future<Outcome> slow = pool.submit(() -> {
        try (Connection c = target().open()) {
          return shortLived.execute(c, request, connCtx -> {
            Connection conn = connCtx.connection();
            claimed.countDown();
            long id = effects.insert(conn, "t", "{}");
            Thread.sleep(1500);
            return StoredResponse.of(201, "{\"id\":" + id + "}");
          });
        }
      });
      assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
      Future<Outcome> waiter = pool.submit(() -> {
        try (Connection c = target().open()) {
          return shortLived.execute(c, request, connCtx -> StoredResponse.of(201, "{\"id\":" + effects.insert(connCtx.connection(), "t", "{}") + "}"));
        }
      });
      Outcome first = slow.get(30, TimeUnit.SECONDS);
      Outcome second = waiter.get(30, TimeUnit.SECONDS);
      // claim-first: the waiter blocks on the slow claim and replays it; key-last: the waiter's
      // key row lands first and the slow request, once done, rolls back and replays the waiter's
      assertThat(List.of(first, second)).filteredOn(Outcome::replayed).hasSize(1);
      assertThat(idOf(second)).isEqualTo(idOf(first));
    } finally {
      pool.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void replaysInsideCallerTransactionsTakeNoLocksSoOppositeOrdersDoNotDeadlock() throws Exception {
    try (Connection c = target().open()) {
      Assumptions.assumeTrue(!Dialect.detect(c).serializesWriters(), "SQLite has a single writer: joined transactions serialize");
      create(c, request("alice", "k-x", "{}"), "{}");
      create(c, request("alice", "k-y", "{}"), "{}");
    }
    CyclicBarrier between = new CyclicBarrier(2);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<Boolean>> both = new ArrayList<>();
      for (String[] order : new String[][] {{"k-x", "k-y"}, {"k-y", "k-x"}}) {
        both.add(pool.submit(() -> {
          try (Connection c = target().open()) {
            c.setAutoCommit(false);
            boolean replayed = create(c, request("alice", order[0], "{}"), "{}").replayed();
            between.await(10, TimeUnit.SECONDS);
            replayed &= create(c, request("alice", order[1], "{}"), "{}").replayed();
            c.commit();
            return replayed;
          }
        }));
      }
      for (Future<Boolean> f : both) {
        assertThat(f.get(30, TimeUnit.SECONDS)).isTrue();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(2);
  }

  @Test
  void concurrentDuplicatesUnderRepeatableReadStillReplay() throws Exception {
    try (Connection c = target().open()) {
      Assumptions.assumeTrue(Dialect.detect(c).supportsRepeatableRead(), "SQLite has no REPEATABLE READ level");
    }
    IdempotentRequest request = request("alice", "k-rr", "{}");
    List<Outcome> outcomes = race(12, c -> {
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      return idem.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        invocations.incrementAndGet();
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(200);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      });
    });
    assertThat(outcomes).extracting(TransactionalContract::idOf).containsOnly(idOf(outcomes.get(0)));
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void firstUseInsideAnOpenTransactionDoesNotHangAnotherThreadsFirstUse() throws Exception {
    JdbcIdempotency fresh = builder().table("fresh_" + suffix).build();
    try (Connection t1 = target().open()) {
      Assumptions.assumeTrue(!Dialect.detect(t1).ddlCommitsTransaction(),
          "MySQL's and H2's DDL commits the caller's transaction: Idem refuses to create the table inside one");
      t1.setAutoCommit(false);
      fresh.execute(t1, request("alice", "k1", "{}"), conn -> StoredResponse.of(201, "{}"));
      ExecutorService pool = Executors.newSingleThreadExecutor();
      try {
        Future<Outcome> t2 = pool.submit(() -> {
          try (Connection c = target().open()) {
            return fresh.execute(c, request("alice", "k2", "{}"), conn -> StoredResponse.of(201, "{}"));
          }
        });
        Thread.sleep(300); // let the second thread reach the table creation
        fresh.execute(t1, request("alice", "k3", "{}"), conn -> StoredResponse.of(201, "{}"));
        t1.commit();
        assertThat(t2.get(30, TimeUnit.SECONDS).replayed()).isFalse();
      } finally {
        pool.shutdownNow();
        t1.setAutoCommit(true);
        try (Statement st = t1.createStatement()) {
          st.execute("DROP TABLE IF EXISTS " + fresh.table());
        }
      }
    }
  }

  /**
   * Regression: tableExists asked the catalog of every database (MariaDB) or schema (PostgreSQL),
   * so a key table of the same name elsewhere stopped Idem from creating its own, and the first
   * lookup failed with "table doesn't exist".
   */
  @Test
  void aKeyTableOfTheSameNameInAnotherDatabaseOrSchemaIsNotMistakenForOurs() throws Exception {
    String other = "other_" + suffix;
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      Dialect dialect = Dialect.detect(c);
      Assumptions.assumeTrue(dialect.hasSchemas(), "SQLite has one database per file");
      st.execute("CREATE SCHEMA " + other); // a database on MySQL and MariaDB
      try {
        st.execute("CREATE TABLE " + other + "." + idem.table() + " (unrelated INT)");
        Outcome outcome = create(c, request("alice", "k-elsewhere", "{}"), "{}");
        assertThat(outcome.replayed()).isFalse();
        assertThat(create(c, request("alice", "k-elsewhere", "{}"), "{}").replayed()).isTrue();
        assertThat(idem.tableExists(c)).isTrue();
      } finally {
        st.execute("DROP SCHEMA " + other + (dialect.schemaIsDatabase() ? "" : " CASCADE"));
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void theShippedSchemaFileCreatesAUsableTable() throws Exception {
    JdbcIdempotency migrated = builder().table("idem_keys").createSchema(false).build();
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS idem_keys");
      String sql;
      try (InputStream in = JdbcIdempotency.class.getResourceAsStream(Dialect.detect(c).schemaResource())) {
        sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      for (String statement : sql.replaceAll("(?m)^--.*$", "").split(";")) {
        if (!statement.isBlank()) {
          st.execute(statement);
        }
      }
      IdempotentRequest request = request("alice", "k-migrated", "{}");
      migrated.execute(c, request, conn -> StoredResponse.of(201, "{\"id\":1}"));
      assertThat(migrated.execute(c, request, conn -> StoredResponse.of(500, "")).replayed()).isTrue();
      st.execute("DROP TABLE idem_keys");
    }
  }

  @Test
  void theLabShowsNaiveDuplicatesAndProtectedSingleEffects() throws Exception {
    LabReport report = new Lab(target(), 8).run();
    assertThat(report.protectedOk()).as(report.toString()).isTrue();
    assertThat(find(report, "lost-response", Lab.NAIVE).effects()).isEqualTo(2);
    assertThat(find(report, "lost-response", Lab.PROTECTED).effects()).isEqualTo(1);
    assertThat(find(report, "concurrent", Lab.NAIVE).effects()).isEqualTo(8);
    assertThat(find(report, "concurrent", Lab.PROTECTED).effects()).isEqualTo(1);
    assertThat(find(report, "key-reuse", Lab.PROTECTED).rejected()).isEqualTo(1);
    assertThat(find(report, "distinct-keys", Lab.PROTECTED).effects()).isEqualTo(2);
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + Lab.EFFECTS_TABLE);
      st.execute("DROP TABLE IF EXISTS " + Lab.KEYS_TABLE);
    }
  }

  // ---------------------------------------------------------------- helpers

  /** What each racer does on a connection of its own. */
  @FunctionalInterface
  private interface Racer {
    Outcome run(Connection c) throws Exception;
  }

  /**
   * Opens one connection per racer, releases all racers at once from a barrier, and waits for them.
   *
   * @return their outcomes, in start order
   */
  // ---------------------------------------------------------------- response protection at rest

  private static final ResponseProtection KEY_A = ResponseProtection.builder().key("a", testKey(1)).currentKey("a").build();
  private static final ResponseProtection KEYS_A_B_CURRENT_B =
      ResponseProtection.builder().key("a", testKey(1)).key("b", testKey(2)).currentKey("b").build();
  private static final ResponseProtection ONLY_KEY_B = ResponseProtection.builder().key("b", testKey(2)).currentKey("b").build();

  private static byte[] testKey(int seed) {
    byte[] key = new byte[ResponseProtection.KEY_BYTES];
    for (int i = 0; i < key.length; i++) {
      key[i] = (byte) (seed * 37 + i * 11);
    }
    return key;
  }

  private JdbcIdempotency protectedBy(ResponseProtection protection) {
    return builder().table(idem.table()).responseProtection(protection).build();
  }

  private Outcome createSecret(JdbcIdempotency engine, IdempotentRequest request, String secret) throws SQLException {
    try (Connection c = target().open()) {
      return engine.execute(c, request, connCtx -> {
        Connection conn = connCtx.connection();
        invocations.incrementAndGet();
        long id = effects.insert(conn, "t", secret);
        return StoredResponse.builder(201).header("Location", "/things/" + secret)
            .body("{\"id\":" + id + ",\"secret\":\"" + secret + "\"}").build();
      });
    }
  }

  /** @return the response column's bytes, after checking that a protected record has no clear status */
  private byte[] rawResponse(IdempotentRequest request) throws SQLException {
    try (Connection c = target().open();
        PreparedStatement ps = c.prepareStatement(
            "SELECT response, status FROM " + idem.table() + " WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      ps.setString(1, request.scope().principal());
      ps.setString(2, request.scope().operation());
      ps.setString(3, request.key().value());
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("a record").isTrue();
        byte[] response = rs.getBytes(1);
        rs.getInt(2);
        if (ResponseProtection.isProtected(response)) {
          assertThat(rs.wasNull()).as("a protected record leaves the clear-text status column empty").isTrue();
        }
        return response;
      }
    }
  }

  private void writeRawResponse(IdempotentRequest request, byte[] bytes) throws SQLException {
    try (Connection c = target().open();
        PreparedStatement ps = c.prepareStatement(
            "UPDATE " + idem.table() + " SET response = ? WHERE principal = ? AND operation = ? AND idem_key = ?")) {
      ps.setBytes(1, bytes);
      ps.setString(2, request.scope().principal());
      ps.setString(3, request.scope().operation());
      ps.setString(4, request.key().value());
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  @Test
  void protectedResponsesAreNotStoredInClearAndReplayExactly() throws Exception {
    JdbcIdempotency engine = protectedBy(KEY_A);
    IdempotentRequest request = request("alice", "k-secret", "{\"value\":1}");
    String secret = "secret" + suffix;
    Outcome first = createSecret(engine, request, secret);

    byte[] raw = rawResponse(request);
    assertThat(ResponseProtection.isProtected(raw)).isTrue();
    assertThat(new String(raw, StandardCharsets.ISO_8859_1)).doesNotContain(secret).doesNotContain("/things/");
    Outcome replay = createSecret(engine, request, "must-not-run");
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void recordsProtectedWithTheOldKeyReplayAfterRotationWhileTheOldKeyIsKept() throws Exception {
    IdempotentRequest request = request("alice", "k-rotate", "{\"value\":1}");
    Outcome first = createSecret(protectedBy(KEY_A), request, "one");

    JdbcIdempotency rotated = protectedBy(KEYS_A_B_CURRENT_B);
    Outcome replay = createSecret(rotated, request, "must-not-run");
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());

    IdempotentRequest next = request("alice", "k-rotate-2", "{\"value\":2}");
    Outcome written = createSecret(rotated, next, "two");
    byte[] raw = rawResponse(next);
    assertThat(new String(raw, 3, raw[2], StandardCharsets.US_ASCII)).as("new records use the current key").isEqualTo("b");
    assertThat(createSecret(rotated, next, "must-not-run").response()).isEqualTo(written.response());
    assertThat(effectCount()).isEqualTo(2);
  }

  @Test
  void aProtectedResponseMovedToAnotherKeyIsRefusedNotReplayed() throws Exception {
    JdbcIdempotency engine = protectedBy(KEY_A);
    IdempotentRequest source = request("alice", "k-source", "{\"value\":1}");
    IdempotentRequest target = request("alice", "k-target", "{\"value\":1}");
    createSecret(engine, source, "source");
    createSecret(engine, target, "target");

    writeRawResponse(target, rawResponse(source));

    assertThatThrownBy(() -> createSecret(engine, target, "must-not-run"))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("failed authentication");
    try (Connection c = target().open()) {
      assertThatThrownBy(() -> engine.replay(c, target)).isInstanceOf(StoredResponseUnreadableException.class);
    }
    assertThat(createSecret(engine, source, "must-not-run").replayed()).as("the source is intact").isTrue();
    assertThat(effectCount()).as("the moved record's effect never runs again").isEqualTo(2);
    assertThat(invocations).hasValue(2);
  }

  @Test
  void aProtectedResponseUnderAnUnknownKeyIdIsRefusedNotReplayed() throws Exception {
    IdempotentRequest request = request("alice", "k-unknown", "{\"value\":1}");
    createSecret(protectedBy(KEY_A), request, "a");

    assertThatThrownBy(() -> createSecret(protectedBy(ONLY_KEY_B), request, "must-not-run"))
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("key id 'a'");
    assertThatThrownBy(() -> createSecret(idem, request, "must-not-run"))
        .as("protection turned off while protected records live")
        .isInstanceOf(StoredResponseUnreadableException.class)
        .hasMessageContaining("protection is off");
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void plaintextRecordsWrittenBeforeProtectionStillReplay() throws Exception {
    IdempotentRequest request = request("alice", "k-before", "{\"value\":1}");
    Outcome first = createSecret(idem, request, "clear");
    assertThat(ResponseProtection.isProtected(rawResponse(request))).isFalse();

    Outcome replay = createSecret(protectedBy(KEY_A), request, "must-not-run");
    assertThat(replay.replayed()).isTrue();
    assertThat(replay.response()).isEqualTo(first.response());
    assertThat(effectCount()).isEqualTo(1);
  }

  private List<Outcome> race(int racers, Racer racer) throws Exception {
    return together(racers, start -> {
      try (Connection c = target().open()) {
        start.await(30, TimeUnit.SECONDS);
        return racer.run(c);
      }
    });
  }

  /** One racer of {@link #together}: it calls {@code start.await} when it is ready, then races. */
  @FunctionalInterface
  private interface Racing<T> {
    T run(CyclicBarrier start) throws Exception;
  }

  /** Runs {@code racers} threads that meet at one barrier, and waits for them all (2 minutes at most each). */
  private static <T> List<T> together(int racers, Racing<T> racing) throws Exception {
    CyclicBarrier barrier = new CyclicBarrier(racers);
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        futures.add(pool.submit(() -> racing.run(barrier)));
      }
      List<T> results = new ArrayList<>();
      for (Future<T> f : futures) {
        results.add(f.get(120, TimeUnit.SECONDS));
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  private static ScenarioResult find(LabReport report, String scenario, String variant) {
    return report.results().stream()
        .filter(r -> r.scenario().equals(scenario) && r.variant().equals(variant))
        .findFirst()
        .orElseThrow();
  }

  // ---------------------------------------------------------------- a TransactionRunner's transaction

  /**
   * Transactional mode as the servlet filter and the Spring starter run it: {@link
   * TransactionalIdempotency} opening each attempt's transaction on a runner, in the contract's order.
   */
  private TransactionalIdempotency runnerEngine() {
    JdbcIdempotency keys = builder().table(idem.table()).build();
    try (Connection c = target().open()) {
      keys.createSchema(c); // before the attempts, as the starter does at start-up
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return new TransactionalIdempotency(keys, new DataSourceTransactionRunner(target().dataSource()), IdemListener.NONE);
  }

  /** An effect that inserts its row and answers 201 with its id, after {@code pauseMillis}. */
  private Effect creating(String payload, long pauseMillis) {
    return ctx -> {
      invocations.incrementAndGet();
      long id = effects.insert(ctx.connection(), "t", payload);
      if (pauseMillis > 0) {
        Thread.sleep(pauseMillis);
      }
      return StoredResponse.builder(201).header("Location", "/things/" + id).body("{\"id\":" + id + "}").build();
    };
  }

  private List<AttemptResult> raceAttempts(int racers, java.util.concurrent.Callable<AttemptResult> attempt) throws Exception {
    return together(racers, start -> {
      start.await(30, TimeUnit.SECONDS);
      return attempt.call();
    });
  }

  private static String body(AttemptResult result) {
    return result.outcome().orElseThrow(() -> new AssertionError("no outcome: " + result)).response().bodyAsString();
  }

  @Test
  void inARunnersTransactionALostResponseRetryReplaysAndTheEffectCommitsOnce() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-lost", "{\"value\":1}");
    AttemptResult first = engine.attempt(request, creating("{\"value\":1}", 0));
    AttemptResult retry = engine.attempt(request, ctx -> {
      throw new AssertionError("a stored answer must be replayed, not run again");
    });
    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(retry.outcome().orElseThrow().response()).isEqualTo(first.outcome().orElseThrow().response());
    assertThat(effectCount()).isEqualTo(1);
    assertThat(recordCountNow()).isEqualTo(1);
  }

  @Test
  void inARunnersTransactionConcurrentDuplicatesCommitOneEffectAndAllGetItsAnswer() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-race", "{\"value\":2}");
    List<AttemptResult> results = raceAttempts(8, () -> engine.attempt(request, creating("{\"value\":2}", 50)));
    assertThat(results).extracting(AttemptResult::kind)
        .containsOnly(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED)
        .filteredOn(k -> k == AttemptResult.Kind.EXECUTED).hasSize(1);
    assertThat(results).extracting(TransactionalContract::body).containsOnly(body(results.get(0)));
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * An effect with a unique constraint of its own: under key-last a racing duplicate's effect fails
   * on the winner's row (or deadlocks on it) before it reaches the key; it must still get the
   * winner's answer, never the failure.
   */
  @Test
  void inARunnersTransactionADuplicateWhoseEffectFailsOnTheWinnersRowsReplaysTheWinner() throws Exception {
    String unique = "uniq_" + suffix;
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + unique + " (name VARCHAR(100) PRIMARY KEY)");
    }
    try {
      TransactionalIdempotency engine = runnerEngine();
      IdempotentRequest request = request("alice", "k-runner-unique", "{\"name\":\"x\"}");
      List<AttemptResult> results = raceAttempts(8, () -> engine.attempt(request, ctx -> {
        Connection conn = ctx.connection();
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + unique + " (name) VALUES ('x')")) {
          ps.executeUpdate();
        }
        long id = effects.insert(conn, "t", "{}");
        Thread.sleep(100);
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(results).extracting(AttemptResult::kind)
          .containsOnly(AttemptResult.Kind.EXECUTED, AttemptResult.Kind.REPLAYED)
          .filteredOn(k -> k == AttemptResult.Kind.EXECUTED).hasSize(1);
      assertThat(results).extracting(TransactionalContract::body).containsOnly(body(results.get(0)));
    } finally {
      try (Connection c = target().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + unique);
      }
    }
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * The filter claims the key just before the first byte of an answer that streams to the client
   * ({@link dev.idem.core.EffectContext#ensureClaimed()}). A duplicate that runs meanwhile must
   * never answer on its own, even when its handler catches the refusal and answers something: it
   * replays the first attempt's answer, and only the first attempt's writes commit.
   */
  @Test
  void inARunnersTransactionAnAnswerThatClaimedTheKeyIsTheOneADuplicateReplays() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-stream", "{\"value\":3}");
    CountDownLatch claimed = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean refused = new java.util.concurrent.atomic.AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<AttemptResult> first = pool.submit(() -> engine.attempt(request, ctx -> {
        long id = effects.insert(ctx.connection(), "t", "first");
        ctx.ensureClaimed();
        ctx.ensureClaimed(); // a second call returns at once
        claimed.countDown();
        if (!release.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
      Future<AttemptResult> second = pool.submit(() -> engine.attempt(request, ctx -> {
        effects.insert(ctx.connection(), "t", "second");
        try {
          ctx.ensureClaimed();
        } catch (dev.idem.core.RequestInProgressException e) {
          refused.set(true);
          return StoredResponse.of(500, "the handler caught the refusal and answered");
        }
        return StoredResponse.of(201, "{\"id\":-1}");
      }));
      Thread.sleep(300); // the duplicate is now running, or waiting for the first's locks
      release.countDown();
      AttemptResult one = first.get(60, TimeUnit.SECONDS);
      AttemptResult two = second.get(60, TimeUnit.SECONDS);
      assertThat(one.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(two.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(body(two)).isEqualTo(body(one));
    } finally {
      pool.shutdownNow();
    }
    if (strategy() == JdbcIdempotency.Strategy.KEY_LAST) {
      assertThat(refused).as("key-last: the duplicate's claim met the first attempt's").isTrue();
    }
    assertThat(effectCount()).isEqualTo(1);
    try (Connection c = target().open(); PreparedStatement ps = c.prepareStatement(
        "SELECT COUNT(*) FROM " + effects.name() + " WHERE payload = 'second'")) {
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getLong(1)).as("the duplicate's writes were rolled back").isZero();
      }
    }
  }

  /**
   * Key-last records the key after the effect: a duplicate from another instance that runs while
   * the first attempt's effect still runs (and has not claimed the key) can record first. Then it is
   * the winner: the first attempt rolls back, effect included, and replays the duplicate's answer.
   * One committed effect, one answer for both.
   */
  @Test
  void underKeyLastADuplicateThatRecordsFirstWinsAndTheFirstAttemptReplaysIt() throws Exception {
    Assumptions.assumeTrue(strategy() == JdbcIdempotency.Strategy.KEY_LAST, "claim-first: the first attempt holds the key from its start");
    try (Connection c = target().open()) {
      Assumptions.assumeTrue(!Dialect.detect(c).serializesWriters(),
          "SQLite has one writer: no duplicate writes while the first attempt's transaction has written");
    }
    TransactionalIdempotency engine = runnerEngine();
    TransactionalIdempotency otherInstance = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-overtaken", "{\"value\":8}");
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, ctx -> {
        long id = effects.insert(ctx.connection(), "slow", "{}");
        entered.countDown();
        if (!release.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
        return StoredResponse.of(201, "{\"id\":" + id + "}");
      }));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      AttemptResult duplicate = otherInstance.attempt(request, creating("{\"value\":8}", 0));
      assertThat(duplicate.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      release.countDown();
      AttemptResult overtaken = running.get(30, TimeUnit.SECONDS);
      assertThat(overtaken.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(body(overtaken)).isEqualTo(body(duplicate));
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    try (Connection c = target().open()) {
      assertThat(effects.count(c, "slow")).as("the overtaken attempt's write was rolled back").isZero();
    }
  }

  @Test
  void inARunnersTransactionAFailureAnswerIsReleasedWithItsWritesAndARetryRunsAgain() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-503", "{\"value\":4}");
    AttemptResult failed = engine.attempt(request, ctx -> {
      effects.insert(ctx.connection(), "t", "{\"value\":4}");
      return StoredResponse.of(503, "try later");
    });
    assertThat(failed.kind()).isEqualTo(AttemptResult.Kind.RELEASED);
    assertThat(effectCount()).isZero();
    AttemptResult again = engine.attempt(request, creating("{\"value\":4}", 0));
    assertThat(again.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(effectCount()).isEqualTo(1);
  }

  @Test
  void inARunnersTransactionAnEffectThatThrowsLeavesNothingAndTheExceptionReachesTheCaller() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    IdempotentRequest request = request("alice", "k-runner-throws", "{\"value\":5}");
    assertThatThrownBy(() -> engine.attempt(request, ctx -> {
      effects.insert(ctx.connection(), "t", "{\"value\":5}");
      throw new IllegalStateException("the handler's bug");
    })).isInstanceOf(IllegalStateException.class).hasMessage("the handler's bug");
    assertThat(effectCount()).isZero();
    assertThat(recordCountNow()).isZero();
    assertThat(engine.attempt(request, creating("{\"value\":5}", 0)).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
  }

  @Test
  void inARunnersTransactionAKeyReusedWithAnotherPayloadIsRefusedAndRunsNothing() throws Exception {
    TransactionalIdempotency engine = runnerEngine();
    assertThat(engine.attempt(request("alice", "k-runner-reuse", "{\"value\":6}"), creating("{\"value\":6}", 0)).kind())
        .isEqualTo(AttemptResult.Kind.EXECUTED);
    AttemptResult reused = engine.attempt(request("alice", "k-runner-reuse", "{\"value\":7}"), ctx -> {
      throw new AssertionError("a reused key must not run");
    });
    assertThat(reused.kind()).isEqualTo(AttemptResult.Kind.KEY_REUSED);
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * A handler that catches its own unique violation and answers 409: on PostgreSQL the error
   * aborted the transaction, so the key cannot be recorded beside it; the answer is stored alone
   * and replayed. A success answered after such an error is refused on PostgreSQL, where its writes
   * cannot commit.
   */
  @Test
  void inARunnersTransactionAClientErrorAfterACaughtSqlErrorIsStoredAndASuccessOnlyWhereItsWritesCommit() throws Exception {
    String users = "users_" + suffix;
    boolean abortsOnError;
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE " + users + " (email VARCHAR(100) PRIMARY KEY)");
      st.execute("INSERT INTO " + users + " (email) VALUES ('ann@example.com')");
      abortsOnError = Dialect.detect(c).abortsTransactionOnError();
    }
    try {
      TransactionalIdempotency engine = runnerEngine();
      IdempotentRequest signup = request("alice", "k-runner-signup", "{\"email\":\"ann@example.com\"}");
      AttemptResult first = engine.attempt(signup, ctx -> register(ctx.connection(), users, "ann@example.com"));
      assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(first.outcome().orElseThrow().response().status()).isEqualTo(409);
      AttemptResult again = engine.attempt(signup, ctx -> {
        throw new AssertionError("a stored answer must be replayed, not run again");
      });
      assertThat(again.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(again.outcome().orElseThrow().response().status()).isEqualTo(409);

      IdempotentRequest success = request("alice", "k-runner-success", "{\"email\":\"ann@example.com\"}");
      AttemptResult answered = engine.attempt(success, ctx -> {
        register(ctx.connection(), users, "ann@example.com");
        return StoredResponse.of(201, "registered anyway");
      });
      if (abortsOnError) {
        assertThat(answered.kind()).as("the request's own failure: a retry would do the same").isEqualTo(AttemptResult.Kind.REQUEST_FAILED);
        assertThat(answered.outcome()).isEmpty();
      } else {
        assertThat(answered.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      }
      assertThat(recordCountNow()).isEqualTo(abortsOnError ? 1 : 2);
    } finally {
      try (Connection c = target().open(); Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS " + users);
      }
    }
  }

  private long recordCountNow() throws SQLException {
    try (Connection c = target().open()) {
      return recordCount(c);
    }
  }

  // ---------------------------------------------------------------- bounded claims (in progress)

  /** The transactional engine on plain JDBC, with the claim's lock wait bounded. */
  private TransactionalIdempotency boundedEngine(InProgressPolicy inProgress, javax.sql.DataSource dataSource) {
    JdbcIdempotency bounded = builder().table(idem.table()).claimLockWait(Duration.ofMillis(20)).build();
    try (Connection c = target().open()) {
      // before the attempts: created inside the first attempt's transaction, the table would keep
      // the duplicate's CREATE TABLE IF NOT EXISTS waiting on that transaction's catalog lock
      bounded.createSchema(c);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return new TransactionalIdempotency(bounded, new DataSourceTransactionRunner(dataSource), IdemListener.NONE, inProgress);
  }

  private void assumeClaimsCanBeBounded() throws SQLException {
    try (Connection c = target().open()) {
      Assumptions.assumeTrue(Dialect.detect(c).boundsClaimWait(c),
          "a claim's lock wait is bounded on PostgreSQL and MariaDB only; SQLite's single writer waits its busy"
              + " timeout, and MySQL's and H2's lock wait is the session's, not one statement's");
    }
  }

  /**
   * The effect of a duplicate from another instance that arrives while the first attempt runs.
   * Claim-first never runs it: its claim meets the first attempt's row. Key-last may run it (the key
   * is recorded after the effect), and its write must be rolled back ({@link #duplicateWrites()}).
   */
  private Effect duplicateOfARunningAttempt() {
    if (strategy() == JdbcIdempotency.Strategy.CLAIM_FIRST) {
      return ctx -> {
        throw new AssertionError("a duplicate of a running attempt must not run");
      };
    }
    return ctx -> {
      effects.insert(ctx.connection(), "dup", "{}");
      return StoredResponse.of(201, "{\"id\":-1}");
    };
  }

  /** @return the committed writes of {@link #duplicateOfARunningAttempt()} */
  private long duplicateWrites() throws SQLException {
    try (Connection c = target().open()) {
      return effects.count(c, "dup");
    }
  }

  /** An effect that inserts its row, then holds its transaction open until {@code release}. */
  private Effect held(CountDownLatch entered, CountDownLatch release, String payload) {
    return ctx -> {
      invocations.incrementAndGet();
      long id = effects.insert(ctx.connection(), "t", payload);
      // Claim-first holds the key's row already. Key-last records it after the effect, so a
      // duplicate would find nothing to meet: the first attempt claims it now, as the filter does
      // before an answer streams (see underKeyLastADuplicateThatRecordsFirstWins... for the race
      // without it).
      ctx.ensureClaimed();
      entered.countDown();
      if (!release.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test never released the first attempt");
      }
      return StoredResponse.builder(201).body("{\"id\":" + id + "}").build();
    };
  }

  /**
   * Was: with bounded claims (the starter's configuration), 16 threads resending one key that had
   * completed long before got 737 answers "in progress" out of 800, since a duplicate of any attempt
   * running in the same instance, a replay included, was answered in progress without a look at the
   * key's record. A completed key is replayed, whatever else runs for it at the same moment.
   */
  @Test
  void concurrentReplaysOfACompletedKeyAreAllReplayedNeverAnsweredInProgress() throws Exception {
    IdempotentRequest request = request("alice", "k-replayed", "{\"value\":7}");
    TransactionalIdempotency bounded = boundedEngine(InProgressPolicy.failFast(), target().dataSource());
    TransactionalIdempotency unbounded = runnerEngine();
    AttemptResult first = bounded.attempt(request, creating("{\"value\":7}", 0));
    assertThat(first.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    for (TransactionalIdempotency engine : List.of(bounded, unbounded)) {
      List<List<AttemptResult>> rounds = together(16, start -> {
        start.await(30, TimeUnit.SECONDS);
        List<AttemptResult> mine = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
          mine.add(engine.attempt(request, ctx -> {
            throw new AssertionError("a completed key must be replayed, not run again");
          }));
        }
        return mine;
      });
      List<AttemptResult> all = rounds.stream().flatMap(List::stream).toList();
      assertThat(all).hasSize(320);
      assertThat(all).extracting(AttemptResult::kind).containsOnly(AttemptResult.Kind.REPLAYED);
      assertThat(all).extracting(TransactionalContract::body).containsOnly(body(first));
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(recordCountNow()).isEqualTo(1);
  }

  /**
   * Was: on SQLite a duplicate sent while the first request ran in the same instance ran its effect
   * a second time (rolled back) and was answered with the first's response, since the engine's
   * in-instance check skipped SQLite: the conformance vector {@code core/concurrent-409} failed. On
   * every database a duplicate of an attempt running in the same instance is in progress at once
   * and never runs.
   */
  @Test
  void onEveryDatabaseADuplicateOfAnAttemptRunningInTheSameInstanceIsInProgressWithoutRunning() throws Exception {
    IdempotentRequest request = request("alice", "k-same-instance", "{\"value\":8}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.failFast(), target().dataSource());
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    AtomicInteger duplicateRuns = new AtomicInteger();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":8}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      for (int i = 0; i < 3; i++) {
        AttemptResult duplicate = engine.attempt(request, ctx -> {
          duplicateRuns.incrementAndGet();
          return StoredResponse.builder(200).body("{\"duplicate\":true}").build();
        });
        assertThat(duplicate.kind()).as(failureOf(duplicate)).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
        assertThat(duplicate.retryAfter()).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
      }
      assertThat(running.isDone()).as("the first attempt still runs").isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    assertThat(duplicateRuns).as("runs of the duplicates' effects").hasValue(0);
    assertThat(engine.attempt(request, ctx -> {
      throw new AssertionError("a completed key must be replayed");
    }).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(effectCount()).isEqualTo(1);
  }

  /**
   * Was: a duplicate of a running request waited on its row lock for as long as the first attempt
   * ran, holding a pooled connection and a transaction; 30 such duplicates of a 4 s request made an
   * unrelated create wait 2.7 s for a connection.
   */
  @Test
  void aBoundedClaimAnswersInProgressAtOnceInsteadOfWaitingOnTheFirstAttemptsRow() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-busy", "{\"value\":1}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.failFast(), target().dataSource());
    // the duplicate arrives at another instance of the service: its claim meets the first's row
    TransactionalIdempotency otherInstance = boundedEngine(InProgressPolicy.failFast(), target().dataSource());
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":1}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      AttemptResult duplicate = otherInstance.attempt(request, duplicateOfARunningAttempt());
      assertThat(engine.attempt(request, ctx -> {
        throw new AssertionError("a duplicate of a running attempt must not run");
      }).kind()).as("a duplicate in the same instance").isEqualTo(AttemptResult.Kind.IN_PROGRESS);
      assertThat(duplicate.kind()).as(failureOf(duplicate)).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
      assertThat(duplicate.retryAfter()).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
      assertThat(running.isDone()).as("the first attempt still runs").isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    AttemptResult retry = engine.attempt(request, ctx -> {
      throw new AssertionError("a completed key must be replayed");
    });
    assertThat(retry.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
    assertThat(duplicateWrites()).as("writes of the duplicate's run").isZero();
  }

  @Test
  void aWaitingDuplicateReplaysTheFirstAnswerHoldingNoConnectionBetweenItsAttempts() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-wait", "{\"value\":2}");
    ConnectionCounter counter = new ConnectionCounter(target());
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofSeconds(30)), counter.dataSource);
    // the duplicate arrives at another instance: it cannot see the first attempt but in the database
    TransactionalIdempotency otherInstance = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofSeconds(30)), counter.dataSource);
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<AttemptResult> running = threads.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":2}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      Future<AttemptResult> waiting = threads.submit(() -> {
        counter.watchThisThread();
        return otherInstance.attempt(request, duplicateOfARunningAttempt());
      });
      // The duplicate gives up on the row, lets its connection go, and tries again: three attempts
      // while the first still holds its transaction.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (counter.watchedOpens() < 3 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(counter.watchedOpens()).isGreaterThanOrEqualTo(3);
      assertThat(waiting.isDone()).isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      AttemptResult answered = waiting.get(30, TimeUnit.SECONDS);
      assertThat(answered.kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
      assertThat(answered.outcome().orElseThrow().response().bodyAsString()).isEqualTo(running.get().outcome().orElseThrow().response().bodyAsString());
      assertThat(counter.watchedMostOpenAtOnce()).as("connections the waiting duplicate held at once").isEqualTo(1);
    } finally {
      release.countDown();
      threads.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
    assertThat(duplicateWrites()).as("writes of the duplicate's runs").isZero();
  }

  /**
   * Duplicates that reach the instance running the first attempt wait for it in memory: one read
   * of the key's record, then no connection and no statement until it ends; then each replays its
   * answer.
   */
  @Test
  void waitingDuplicatesInTheSameInstanceOpenNoConnectionUntilTheFirstAttemptEnds() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-local", "{\"value\":5}");
    ConnectionCounter counter = new ConnectionCounter(target());
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofSeconds(30)), counter.dataSource);
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<AttemptResult> running = threads.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":5}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      CountDownLatch waitingStarted = new CountDownLatch(1);
      Future<AttemptResult> waiting = threads.submit(() -> {
        counter.watchThisThread();
        waitingStarted.countDown();
        return engine.attempt(request, ctx -> {
          throw new AssertionError("a duplicate of a running attempt must not run");
        });
      });
      assertThat(waitingStarted.await(30, TimeUnit.SECONDS)).isTrue();
      Thread.sleep(300); // long enough for several polls, had the duplicate polled the database
      // one read of the key's record (a completed key would be replayed), then nothing until the end
      assertThat(counter.watchedOpens()).as("connections the waiting duplicate opened while the first ran").isLessThanOrEqualTo(1);
      assertThat(waiting.isDone()).isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(waiting.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.REPLAYED);
    } finally {
      release.countDown();
      threads.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(invocations).hasValue(1);
  }

  @Test
  void aWaitingDuplicateAnswersInProgressWhenItsWaitRunsOut() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-slow", "{\"value\":3}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofMillis(200)), target().dataSource());
    TransactionalIdempotency otherInstance = boundedEngine(InProgressPolicy.waitUpTo(Duration.ofMillis(200)), target().dataSource());
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService first = Executors.newSingleThreadExecutor();
    try {
      Future<AttemptResult> running = first.submit(() -> engine.attempt(request, held(entered, release, "{\"value\":3}")));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      for (TransactionalIdempotency at : List.of(otherInstance, engine)) {
        AttemptResult duplicate = at.attempt(request, duplicateOfARunningAttempt());
        assertThat(duplicate.kind()).isEqualTo(AttemptResult.Kind.IN_PROGRESS);
      }
      assertThat(running.isDone()).isFalse();
      release.countDown();
      assertThat(running.get(30, TimeUnit.SECONDS).kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
    } finally {
      release.countDown();
      first.shutdownNow();
    }
    assertThat(effectCount()).isEqualTo(1);
    assertThat(duplicateWrites()).as("writes of the duplicates' runs").isZero();
  }

  /**
   * The bound is the key statement's alone in a runner's transaction too: what the transaction
   * runs after it (a JPA flush at the commit, under key-last after the key's row) waits as the
   * session says. The bound is set, saved and put back in the key statement's own round trip.
   */
  @Test
  void aBoundedKeyStatementPutsTheSessionsLockWaitBackForWhatTheTransactionRunsAfterIt() throws Exception {
    assumeClaimsCanBeBounded();
    JdbcIdempotency bounded = builder().table(idem.table()).claimLockWait(Duration.ofMillis(20)).build();
    String[] seen = new String[2];
    TransactionRunner plain = new DataSourceTransactionRunner(target().dataSource());
    TransactionRunner checking = new TransactionRunner() {
      @Override
      public javax.sql.DataSource dataSource() {
        return plain.dataSource();
      }

      @Override
      public <T> T inTransaction(Work<T> work) {
        return plain.inTransaction((connection, transaction) -> {
          try {
            String show = Dialect.detect(connection).lockWaitQuery();
            seen[0] = scalar(connection, show);
            T result = work.run(connection, transaction);
            seen[1] = scalar(connection, show); // after the key statement, before the commit
            return result;
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
        });
      }
    };
    try (Connection c = target().open()) {
      bounded.createSchema(c);
    }
    TransactionalIdempotency engine = new TransactionalIdempotency(bounded, checking, IdemListener.NONE, InProgressPolicy.failFast());
    AttemptResult result = engine.attempt(request("alice", "k-session-after", "{\"value\":5}"),
        ctx -> StoredResponse.builder(201).body("{}").build());
    assertThat(result.kind()).as(failureOf(result)).isEqualTo(AttemptResult.Kind.EXECUTED);
    assertThat(seen[0]).isNotNull();
    assertThat(seen[1]).as("the lock wait after the key statement, in the same transaction").isEqualTo(seen[0]);
  }

  /** The bound is the claim's alone: the effect's statements wait as the session says. */
  @Test
  void aBoundedClaimLeavesTheSessionsLockWaitToTheEffect() throws Exception {
    assumeClaimsCanBeBounded();
    IdempotentRequest request = request("alice", "k-session", "{\"value\":4}");
    TransactionalIdempotency engine = boundedEngine(InProgressPolicy.failFast(), target().dataSource());
    String[] seen = new String[2];
    try (Connection c = target().open()) {
      String show = Dialect.detect(c).lockWaitQuery();
      seen[0] = scalar(c, show);
      AttemptResult result = engine.attempt(request, ctx -> {
        seen[1] = scalar(ctx.connection(), show);
        return StoredResponse.builder(201).body("{}").build();
      });
      assertThat(result.kind()).as(failureOf(result)).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(seen[1]).as("the lock wait the effect runs with").isEqualTo(seen[0]);
      c.setAutoCommit(false);
      AttemptResult joined = engine.attemptIn(c, request("alice", "k-session-joined", "{}"), ctx -> {
        seen[1] = scalar(ctx.connection(), show);
        return StoredResponse.builder(201).body("{}").build();
      });
      c.commit();
      assertThat(joined.kind()).isEqualTo(AttemptResult.Kind.EXECUTED);
      assertThat(seen[1]).as("in the caller's transaction").isEqualTo(seen[0]);
      assertThat(scalar(c, show)).as("after the caller's transaction").isEqualTo(seen[0]);
    }
  }

  private static String failureOf(AttemptResult result) {
    java.io.StringWriter out = new java.io.StringWriter();
    result.failure().ifPresent(f -> f.printStackTrace(new java.io.PrintWriter(out)));
    return out.toString();
  }

  private static String scalar(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  /** Counts the connections one watched thread opens, and the most it holds open at once. */
  private static final class ConnectionCounter {
    private volatile Thread watched;
    private final AtomicInteger opens = new AtomicInteger();
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicInteger mostOpen = new AtomicInteger();
    final javax.sql.DataSource dataSource;

    ConnectionCounter(JdbcTarget target) {
      this.dataSource = dev.idem.lab.SimpleDataSource.of(() -> counted(target.open()));
    }

    void watchThisThread() {
      watched = Thread.currentThread();
    }

    int watchedOpens() {
      return opens.get();
    }

    int watchedMostOpenAtOnce() {
      return mostOpen.get();
    }

    private Connection counted(Connection c) {
      if (Thread.currentThread() != watched) {
        return c;
      }
      opens.incrementAndGet();
      mostOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
      boolean[] closed = new boolean[1];
      return (Connection) java.lang.reflect.Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> {
            if (method.getName().equals("close") && !closed[0]) {
              closed[0] = true;
              open.decrementAndGet();
            }
            try {
              return method.invoke(c, args);
            } catch (java.lang.reflect.InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }
  }

  private static IdempotentRequest request(String principal, String key, String json) {
    return request(Scope.of(principal, "POST /things"), key, json);
  }

  private static IdempotentRequest request(Scope scope, String key, String json) {
    return new IdempotentRequest(scope, IdempotencyKey.of(key), Fingerprint.ofJson(json.getBytes(StandardCharsets.UTF_8)));
  }

  /** A request's scope and key, with spaces and characters outside printable ASCII shown as U+XXXX. */
  private static String describe(IdempotentRequest r) {
    return "principal " + show(r.scope().principal()) + ", operation " + show(r.scope().operation()) + ", key " + show(r.key().value());
  }

  private static String show(String value) {
    StringBuilder b = new StringBuilder("'");
    value.codePoints().forEach(cp -> b.append(cp > 0x20 && cp < 0x7F ? Character.toString(cp) : String.format("<U+%04X>", cp)));
    return b.append('\'').toString();
  }

  private Outcome create(Connection c, IdempotentRequest request, String payload) {
    return idem.execute(c, request, connCtx -> {
      Connection conn = connCtx.connection();
      invocations.incrementAndGet();
      long id = effects.insert(conn, "t", payload);
      return StoredResponse.builder(201).header("Location", "/things/" + id).body("{\"id\":" + id + "}").build();
    });
  }

  private static long idOf(Outcome outcome) {
    String body = outcome.response().bodyAsString();
    return Long.parseLong(body.replaceAll("[^0-9]", ""));
  }

  private long effectCount() throws SQLException {
    try (Connection c = target().open()) {
      return effects.count(c, "t");
    }
  }

  private long recordCount(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + idem.table());
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
