package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
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
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 35, section 5: three instances of one service started at the same moment on a new
 * PostgreSQL database, and one failed to start with a unique violation on {@code
 * pg_class_relname_nsp_index} ({@code CREATE INDEX IF NOT EXISTS} is not safe under concurrency).
 * Here eight creators, each on a connection of its own (as separate processes look to the
 * database), are released by one barrier and each creates every table Idem makes: the key table
 * (transactional engine and lease store on the same table, as the starter does), the step table,
 * the outbox and a consumer's key table. All must succeed, every table and index must exist once,
 * and the tables must work. The window is small, so the race is repeated with new names. One
 * small subclass per database.
 */
abstract class SchemaCreationRaceContract {

  private static final int CREATORS = 8;
  private static final int ROUNDS = 10;

  protected abstract JdbcTarget target();

  private final List<String> made = new ArrayList<>();

  @AfterEach
  void dropTables() throws SQLException {
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      for (String table : made) {
        st.execute("DROP TABLE IF EXISTS " + table);
      }
    }
  }

  /** The names of one round's tables. */
  private record Names(String keys, String steps, String outbox, String consumer) {
    static Names fresh() {
      String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10).toLowerCase(Locale.ROOT);
      return new Names("k_" + suffix, "s_" + suffix, "ob_" + suffix, "ck_" + suffix);
    }

    List<String> all() {
      return List.of(steps, outbox, keys, consumer);
    }
  }

  @Test
  void eightCreatorsAtOnceOnANewDatabaseAllSucceed() throws Exception {
    DataSource ds = target().dataSource();
    ExecutorService pool = Executors.newFixedThreadPool(CREATORS);
    try {
      for (int round = 0; round < ROUNDS; round++) {
        Names names = Names.fresh();
        made.addAll(names.all());
        CyclicBarrier start = new CyclicBarrier(CREATORS);
        List<Future<?>> creators = new ArrayList<>();
        for (int i = 0; i < CREATORS; i++) {
          creators.add(pool.submit(() -> {
            // Everything a starting instance builds, on its own connection, opened before the barrier.
            JdbcIdempotency keys = JdbcIdempotency.builder().table(names.keys).dataSource(ds).build();
            JdbcLeaseStore lease = JdbcLeaseStore.builder(ds).table(names.keys).build();
            JdbcStepOperations steps = JdbcStepOperations.builder(ds).keyTable(names.keys).stepTable(names.steps)
                .createSchema(false).build();
            Outbox outbox = Outbox.builder().table(names.outbox).build();
            JdbcIdempotency consumer = JdbcIdempotency.builder().table(names.consumer).dataSource(ds).build();
            try (Connection c = target().open()) {
              start.await(30, TimeUnit.SECONDS);
              keys.createSchema(c);
              lease.createSchema(c);
              steps.createSchema(c);
              outbox.createSchema(c);
              consumer.createSchema(c);
            }
            return null;
          }));
        }
        List<Throwable> failures = new ArrayList<>();
        for (Future<?> creator : creators) {
          try {
            creator.get(120, TimeUnit.SECONDS);
          } catch (java.util.concurrent.ExecutionException e) {
            failures.add(e.getCause());
          }
        }
        assertThat(failures).as("round %d: creators that failed", round).isEmpty();
        assertCreatedOnceAndWorking(ds, names);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void eightCreatorsAtOnceOnPoolsWithAutoCommitOffCreateOnFirstUseAndCommit() throws Exception {
    // A pool configured with auto-commit off (HikariCP autoCommit=false) rolls back what a borrower
    // left uncommitted when the connection returns: the tables made on first use must survive that.
    DataSource ds = new AutoCommitOffDataSource(target().dataSource());
    ExecutorService pool = Executors.newFixedThreadPool(CREATORS);
    try {
      for (int round = 0; round < ROUNDS / 2; round++) {
        Names names = Names.fresh();
        made.addAll(names.all());
        CyclicBarrier start = new CyclicBarrier(CREATORS);
        List<Future<?>> creators = new ArrayList<>();
        for (int i = 0; i < CREATORS; i++) {
          int creator = i;
          creators.add(pool.submit(() -> {
            JdbcIdempotency keys = JdbcIdempotency.builder().table(names.keys).dataSource(ds).build();
            JdbcLeaseStore lease = JdbcLeaseStore.builder(ds).table(names.keys).build();
            JdbcStepOperations steps = JdbcStepOperations.builder(ds).keyTable(names.keys).stepTable(names.steps).build();
            Outbox outbox = Outbox.builder().table(names.outbox).build();
            JdbcIdempotency consumer = JdbcIdempotency.builder().table(names.consumer).dataSource(ds).build();
            start.await(30, TimeUnit.SECONDS);
            outbox.createSchema(ds);
            keys.execute(request("k-" + creator), c -> StoredResponse.of(201, "made"));
            lease.claim(request("l-" + creator), "owner-" + creator, Duration.ofSeconds(30), Duration.ofMinutes(5));
            steps.purgeOrphanedSteps(100); // creates the key and step tables on first use
            consumer.execute(request("c-" + creator), c -> StoredResponse.of(200, "ok"));
            return null;
          }));
        }
        List<Throwable> failures = new ArrayList<>();
        for (Future<?> creator : creators) {
          try {
            creator.get(120, TimeUnit.SECONDS);
          } catch (java.util.concurrent.ExecutionException e) {
            failures.add(e.getCause());
          }
        }
        assertThat(failures).as("round %d: creators that failed", round).isEmpty();
        assertCreatedOnceAndWorking(target().dataSource(), names);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private void assertCreatedOnceAndWorking(DataSource ds, Names names) throws SQLException {
    try (Connection c = target().open()) {
      for (String table : names.all()) {
        assertThat(catalogCount(c, table, false)).as("table %s", table).isEqualTo(1);
      }
      assertThat(catalogCount(c, names.keys + "_expires_at", true)).as("index of %s", names.keys).isEqualTo(1);
      assertThat(catalogCount(c, names.consumer + "_expires_at", true)).as("index of %s", names.consumer).isEqualTo(1);
      assertThat(catalogCount(c, names.outbox + "_due", true)).as("index of %s", names.outbox).isEqualTo(1);
    }
    // The tables work: a key is recorded and replayed, a lease claimed, an intent written.
    JdbcIdempotency keys = JdbcIdempotency.builder().table(names.keys).dataSource(ds).build();
    IdempotentRequest first = request("k1");
    Outcome once = keys.execute(first, c -> StoredResponse.of(201, "made"));
    Outcome again = keys.execute(first, c -> StoredResponse.of(500, "ran twice"));
    assertThat(once.replayed()).isFalse();
    assertThat(again.replayed()).isTrue();
    assertThat(again.response().status()).isEqualTo(201);
    JdbcLeaseStore lease = JdbcLeaseStore.builder(ds).table(names.keys).build();
    assertThat(lease.claim(request("k2"), "owner-1", Duration.ofSeconds(30), Duration.ofMinutes(5)).state())
        .isEqualTo(ClaimResult.State.CLAIMED);
    Outbox outbox = Outbox.builder().table(names.outbox).build();
    JdbcIdempotency consumer = JdbcIdempotency.builder().table(names.consumer).dataSource(ds).build();
    IdempotentRequest message = request("m1");
    consumer.execute(message, outbox.effect(message, (c, out) -> {
      out.add(Intent.rabbitMq("orders", "order.created", "o".getBytes(StandardCharsets.UTF_8)));
      return StoredResponse.of(200, "ok");
    }));
    assertThat(consumer.execute(message, c -> StoredResponse.of(500, "ran twice")).replayed()).isTrue();
    try (Connection c = target().open(); Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + names.outbox)) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isEqualTo(1);
      }
      try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + names.steps)) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isZero();
      }
    }
  }

  private static IdempotentRequest request(String key) {
    return new IdempotentRequest(Scope.of("alice", "POST /orders"), IdempotencyKey.of(key),
        Fingerprint.ofBytes("order".getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * @param index whether the query counts indexes rather than tables
   * @return a query of one count that takes a name as its one parameter: how many tables (or
   *     indexes) of that name the catalog of the connection's schema holds. Per database, in its
   *     subclass: each catalog is its own.
   */
  protected abstract String catalogCountQuery(boolean index);

  /** @return how many tables (or indexes) of that name the catalog of the connection's schema holds */
  private int catalogCount(Connection c, String name, boolean index) throws SQLException {
    String sql = catalogCountQuery(index);
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        return rs.getInt(1);
      }
    }
  }
}
