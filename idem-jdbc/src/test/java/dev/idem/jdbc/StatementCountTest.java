package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What one request sends to the database, counted at the JDBC level ({@link CountingDataSource},
 * which hands out one physical connection like a pool): each statement executed, each {@code
 * commit()}/{@code rollback()}, each {@code setAutoCommit}. The counts are asserted, so an extra
 * statement on a request's path fails here. Schema creation and checks, and SQLite's one-time
 * busy-timeout read per connection, happen on a first, uncounted request.
 *
 * <p>Round trips: every statement counted is one, {@code commit()} included; pgjdbc's {@code
 * setAutoCommit} costs none (the {@code BEGIN} travels with the next statement). SQLite is in
 * process: its "round trips" are calls into the library.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StatementCountTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofMinutes(5);

  private final Map<TestDb.Kind, TestDb> dbs = new EnumMap<>(TestDb.Kind.class);
  private final List<CountingDataSource> sources = new ArrayList<>();

  private synchronized CountingDataSource dataSource(TestDb.Kind kind) throws Exception {
    TestDb db = dbs.get(kind);
    if (db == null) {
      db = TestDb.create(kind);
      dbs.put(kind, db);
      try (Connection c = db.open(); Statement st = c.createStatement()) {
        st.execute("CREATE TABLE notes (id VARCHAR(64) PRIMARY KEY, body VARCHAR(200))");
      }
    }
    TestDb opened = db;
    CountingDataSource ds = new CountingDataSource(opened::open);
    sources.add(ds);
    return ds;
  }

  @AfterAll
  void dropAll() throws Exception {
    for (CountingDataSource ds : sources) {
      ds.close();
    }
    for (TestDb db : dbs.values()) {
      db.drop();
    }
  }

  private static IdempotentRequest request() {
    return IdempotentRequest.ofJson("p", "op", UUID.randomUUID().toString(), "{\"a\":1}".getBytes(StandardCharsets.UTF_8));
  }

  /** The effect: one INSERT of its own, counted with the rest. */
  private static StoredResponse insertNote(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO notes (id, body) VALUES (?, ?)")) {
      ps.setString(1, UUID.randomUUID().toString());
      ps.setString(2, "hello");
      ps.executeUpdate();
    }
    return StoredResponse.of(201, "created");
  }

  private static void report(String what, TestDb.Kind kind, CountingDataSource ds) {
    System.out.println("[statements] " + kind + " " + what + ": " + ds.statements() + " statements, "
        + ds.autoCommitChanges() + " setAutoCommit " + ds.calls);
  }

  private JdbcLeaseStore leaseStore(CountingDataSource ds) {
    JdbcLeaseStore store = JdbcLeaseStore.builder(ds).table("lease_counted").build();
    store.claim(request(), "warm", LEASE, RETENTION); // creates and checks the table
    return store;
  }

  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void leaseCreateIsOneReadOneClaimAndOneCompletion(TestDb.Kind kind) throws Exception {
    CountingDataSource ds = dataSource(kind);
    JdbcLeaseStore store = leaseStore(ds);
    IdempotentRequest r = request();

    ds.reset();
    assertThat(store.claim(r, "owner-1", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.CLAIMED);
    report("lease claim", kind, ds);
    assertThat(ds.calls.get(0)).startsWith("SELECT ").doesNotContain("FOR UPDATE").doesNotContain("LOCK IN");
    if (kind == TestDb.Kind.POSTGRESQL) {
      // the read and the insert in one prepared statement: one round trip
      assertThat(ds.calls).hasSize(1);
      assertThat(ds.calls.get(0)).contains("; INSERT ");
    } else {
      assertThat(ds.calls).hasSize(2);
      assertThat(ds.calls.get(1)).startsWith("INSERT ");
    }

    ds.reset();
    assertThat(store.complete(r.scope(), r.key(), "owner-1", StoredResponse.of(201, "created"), RETENTION)).isTrue();
    report("lease complete", kind, ds);
    assertThat(ds.calls).hasSize(1);
    assertThat(ds.calls.get(0)).startsWith("UPDATE ");
  }

  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void leaseReplayIsOneRead(TestDb.Kind kind) throws Exception {
    CountingDataSource ds = dataSource(kind);
    JdbcLeaseStore store = leaseStore(ds);
    IdempotentRequest r = request();
    store.claim(r, "owner-1", LEASE, RETENTION);
    store.complete(r.scope(), r.key(), "owner-1", StoredResponse.of(201, "created"), RETENTION);

    ds.reset();
    ClaimResult replay = store.claim(r, "owner-2", LEASE, RETENTION);
    report("lease replay", kind, ds);
    assertThat(replay.state()).isEqualTo(ClaimResult.State.COMPLETED);
    assertThat(ds.calls).hasSize(1);
    assertThat(ds.calls.get(0)).startsWith("SELECT ").doesNotContain("FOR UPDATE").doesNotContain("LOCK IN");
    assertNotLocked(kind, ds, "lease_counted", r);
  }

  /**
   * PostgreSQL: the replay's claim statement (sent with its read) inserted nothing and locked
   * nothing, so the row has no locker or deleter ({@code xmax} 0). A row lock would write the row.
   */
  private static void assertNotLocked(TestDb.Kind kind, CountingDataSource ds, String table, IdempotentRequest r) throws SQLException {
    if (kind != TestDb.Kind.POSTGRESQL) {
      return;
    }
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT xmax::text FROM " + table + " WHERE idem_key = ?")) {
      ps.setString(1, r.key().value());
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo("0");
      }
    }
  }

  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void leaseClaimOfAKeyInProgressIsOneRead(TestDb.Kind kind) throws Exception {
    CountingDataSource ds = dataSource(kind);
    JdbcLeaseStore store = leaseStore(ds);
    IdempotentRequest r = request();
    store.claim(r, "owner-1", LEASE, RETENTION);

    ds.reset();
    assertThat(store.claim(r, "owner-2", LEASE, RETENTION).state()).isEqualTo(ClaimResult.State.IN_PROGRESS);
    assertThat(ds.calls).hasSize(1);
  }

  /**
   * A replay in a transaction Idem owns is one primary-key read without a lock, in auto-commit mode;
   * on PostgreSQL with {@code CLAIM_FIRST} the read travels with the claim (which then inserts
   * nothing and locks nothing), and the transaction's end is the second round trip.
   */
  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void transactionalReplayIsOneRead(TestDb.Kind kind) throws Exception {
    for (JdbcIdempotency.Strategy strategy : JdbcIdempotency.Strategy.values()) {
      CountingDataSource ds = dataSource(kind);
      JdbcIdempotency idem = JdbcIdempotency.builder().table("tx_counted").dataSource(ds).strategy(strategy).build();
      IdempotentRequest r = request();
      idem.execute(r, ctx -> insertNote(ctx.connection()));

      ds.reset();
      Outcome replayed = idem.execute(r, ctx -> insertNote(ctx.connection()));
      report("transactional replay " + strategy, kind, ds);
      assertThat(replayed.replayed()).isTrue();
      assertThat(ds.calls.get(ds.calls.get(0).startsWith("setAutoCommit") ? 1 : 0)).startsWith("SELECT ")
          .doesNotContain("FOR UPDATE").doesNotContain("LOCK IN");
      boolean withClaim = kind == TestDb.Kind.POSTGRESQL && strategy == JdbcIdempotency.Strategy.CLAIM_FIRST;
      assertThat(ds.statements()).isEqualTo(withClaim ? 2 : 1);
    }
  }

  /**
   * A create in a transaction Idem owns: the lookup, the transaction's begin (a statement on SQLite
   * and MySQL, piggybacked by pgjdbc), the claim, the effect, the completion, the commit; with
   * {@code KEY_LAST} the claim and the completion are one statement. On PostgreSQL with {@code
   * CLAIM_FIRST} the lookup travels with the claim, and with both strategies the COMMIT travels
   * with the last key statement: 3 round trips, the minimum (the effect, the key, the COMMIT).
   */
  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void transactionalCreateCounts(TestDb.Kind kind) throws Exception {
    for (JdbcIdempotency.Strategy strategy : JdbcIdempotency.Strategy.values()) {
      CountingDataSource ds = dataSource(kind);
      JdbcIdempotency idem = JdbcIdempotency.builder().table("tx_counted").dataSource(ds).strategy(strategy).build();
      idem.execute(request(), ctx -> insertNote(ctx.connection())); // creates and checks the table

      ds.reset();
      Outcome created = idem.execute(request(), ctx -> insertNote(ctx.connection()));
      report("transactional create " + strategy, kind, ds);
      assertThat(created.replayed()).isFalse();
      int keyStatements = strategy == JdbcIdempotency.Strategy.KEY_LAST ? 1 : 2;
      int begin = kind == TestDb.Kind.POSTGRESQL ? 0 : 1;
      int lookup = kind == TestDb.Kind.POSTGRESQL && strategy == JdbcIdempotency.Strategy.CLAIM_FIRST ? 0 : 1;
      int commit = kind == TestDb.Kind.POSTGRESQL ? 0 : 1; // PostgreSQL: the last key statement carries the COMMIT
      // lookup + begin + key statements + the effect's INSERT + commit
      assertThat(ds.statements()).isEqualTo(lookup + begin + keyStatements + 1 + commit);
      assertThat(ds.autoCommitChanges()).isEqualTo(kind == TestDb.Kind.POSTGRESQL ? 2 : 0);
    }
  }

  /**
   * A create through {@link TransactionalIdempotency} on a {@link DataSourceTransactionRunner}, the
   * path of the servlet filter and the Spring starter in transactional mode: the runner's
   * transaction, in which Idem claims first. PostgreSQL: the lookup, the claim and the savepoint in
   * one round trip, the effect, the completion, the commit: 4 round trips, where it took 5 (a
   * lookup of its own) before. SQLite: the lookup on a connection in auto-commit mode before the
   * write lock is taken, then the transaction. MariaDB: the lookup, the claim, the effect, the
   * completion, the commit.
   */
  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void createInTheRunnersTransactionTakesFourRoundTripsOnPostgres(TestDb.Kind kind) throws Exception {
    CountingDataSource ds = dataSource(kind);
    JdbcIdempotency idem = JdbcIdempotency.builder().table("tx_counted").strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(idem, ds, dev.idem.core.IdemListener.NONE);
    dev.idem.core.Effect effect = context -> insertNote(context.connection());
    engine.attempt(request(), effect); // creates and checks the table

    ds.reset();
    IdempotentRequest r = request();
    assertThat(engine.attempt(r, effect).kind()).isEqualTo(dev.idem.core.AttemptResult.Kind.EXECUTED);
    report("runner create", kind, ds);
    int expected = switch (kind) {
      case POSTGRESQL -> 4; // lookup + claim + savepoint, the effect's INSERT, completion, commit
      case SQLITE -> 5; // lookup, claim, the effect's INSERT, completion, commit (sqlite-jdbc begins within setAutoCommit)
      case MARIADB -> 5; // lookup, claim, the effect's INSERT, completion, commit
    };
    assertThat(ds.statements()).isEqualTo(expected);

    ds.reset();
    assertThat(engine.attempt(r, effect).kind()).isEqualTo(dev.idem.core.AttemptResult.Kind.REPLAYED);
    report("runner replay", kind, ds);
    // PostgreSQL and MariaDB: the read (with the claim that inserts nothing, on PostgreSQL) and the
    // end of the runner's transaction; SQLite: the read before any transaction.
    assertThat(ds.statements()).isEqualTo(kind == TestDb.Kind.SQLITE ? 1 : 2);
    assertNotLocked(kind, ds, "tx_counted", r);
  }

  /**
   * The same path with {@link JdbcIdempotency.Strategy#KEY_LAST} (the Spring starter's default):
   * the shape of a hand-written key-last transaction. A create is the lookup on a connection in
   * auto-commit, then the runner's transaction: the effect's INSERT, the key's row inserted
   * completed, the commit; one key statement in the transaction, no savepoint, no completion
   * UPDATE. A replay is the lookup alone, on every database.
   */
  @ParameterizedTest
  @EnumSource(TestDb.Kind.class)
  void keyLastInTheRunnersTransactionIsOneKeyStatementPerCreateAndOneReadPerReplay(TestDb.Kind kind) throws Exception {
    CountingDataSource ds = dataSource(kind);
    JdbcIdempotency idem = JdbcIdempotency.builder().table("tx_key_last").strategy(JdbcIdempotency.Strategy.KEY_LAST).build();
    TransactionalIdempotency engine = TransactionalIdempotency.onDataSource(idem, ds, dev.idem.core.IdemListener.NONE);
    dev.idem.core.Effect effect = context -> insertNote(context.connection());
    engine.attempt(request(), effect); // creates and checks the table

    ds.reset();
    IdempotentRequest r = request();
    assertThat(engine.attempt(r, effect).kind()).isEqualTo(dev.idem.core.AttemptResult.Kind.EXECUTED);
    report("runner key-last create", kind, ds);
    // lookup, the effect's INSERT, the key's INSERT, commit
    assertThat(ds.statements()).isEqualTo(4);
    assertThat(ds.calls).noneMatch(call -> call.contains("SAVEPOINT") || call.startsWith("UPDATE "));

    ds.reset();
    assertThat(engine.attempt(r, effect).kind()).isEqualTo(dev.idem.core.AttemptResult.Kind.REPLAYED);
    report("runner key-last replay", kind, ds);
    assertThat(ds.statements()).isEqualTo(1);
    assertThat(ds.autoCommitChanges()).as("no transaction for a replay").isZero();
    assertNotLocked(kind, ds, "tx_key_last", r);
  }
}
