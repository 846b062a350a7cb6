package dev.idem.benchmarks;

import dev.idem.jdbc.JdbcIdempotency;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** The workloads; {@code LoadHarness} and the report describe what each one does. */
final class Workloads {

  static final String NAIVE = "naive-insert";
  static final String IDEM_CREATE = "idem-create";
  static final String IDEM_CREATE_KEY_LAST = "idem-create-key-last";
  static final String IDEM_REPLAY = "idem-replay";
  static final String LEASE_CREATE = "lease-create";
  static final String LEASE_REPLAY = "lease-replay";
  static final String CHECK_THEN_INSERT = "check-then-insert";
  static final String KEY_LAST = "key-last";
  static final String CAMEL = "camel-jdbc";
  static final String NAIVE_SET = "naive-set";

  /** The lease-mode engines wait this long for a duplicate's winner (only races have duplicates). */
  static final Duration LEASE_WAIT = Duration.ofSeconds(10);

  private Workloads() {}

  /** @return the SQL workloads in report order */
  static List<Workload> sql(SqlBackend db, Options options) {
    List<Workload> all = new ArrayList<>();
    all.add(new NaiveInsert(db));
    all.add(new IdemCreate(db, IDEM_CREATE, "bench_idem", Workload.KeySupply.NEW_V4, 0));
    all.add(new IdemCreate(db, IDEM_CREATE_KEY_LAST, "bench_idem_kl", Workload.KeySupply.NEW_V4, 0,
        JdbcIdempotency.Strategy.KEY_LAST));
    all.add(new IdemReplay(db, options.replayKeys));
    all.add(new LeaseCreateJdbc(db));
    all.add(new CheckThenInsert(db));
    all.add(new KeyLast(db));
    all.add(new CamelRepository(db));
    all.removeIf(w -> !options.runs(w.id()));
    return all;
  }

  /** @return the Redis workloads in report order */
  static List<Workload> redis(RedisBackend redis, Options options) {
    List<Workload> all = new ArrayList<>();
    all.add(new NaiveSet(redis));
    all.add(new LeaseCreateRedis(redis));
    all.add(new LeaseReplayRedis(redis, options.replayKeys));
    all.removeIf(w -> !options.runs(w.id()));
    return all;
  }

  /** Drops an Idem key table and creates it from the shipped schema file. */
  static void recreateKeyTable(SqlBackend db, String table) throws SQLException {
    db.execute("DROP TABLE IF EXISTS " + table);
    JdbcIdempotency.builder().table(table).build().createSchema(db.admin());
  }

  /** @return whether the failure is a unique or primary-key violation, on any of the three databases */
  static boolean isDuplicateKey(SQLException e) {
    String state = e.getSQLState();
    String message = String.valueOf(e.getMessage());
    return "23505".equals(state) // PostgreSQL
        || e.getErrorCode() == 1062 // MySQL, MariaDB
        || message.contains("SQLITE_CONSTRAINT_PRIMARYKEY")
        || message.contains("SQLITE_CONSTRAINT_UNIQUE")
        || message.contains("UNIQUE constraint failed");
  }
}
