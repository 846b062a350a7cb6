package dev.idem.benchmarks;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.StoredResponse;
import dev.idem.core.internal.StoredResponseCodec;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.redis.RedisLeaseStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

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

  // ---------------------------------------------------------------------------------------------
  // SQL

  /** The effect every SQL workload performs: one row in a table of its own, tagged with the key. */
  static final class Effects {
    final String table;
    private final SqlBackend db;
    private final String insert;
    private final boolean generatedKeys;

    Effects(SqlBackend db, String table) {
      this.db = db;
      this.table = table;
      this.generatedKeys = db.dialect == Dialect.MYSQL;
      this.insert = "INSERT INTO " + table + " (tag, payload) VALUES (?, ?)" + (generatedKeys ? "" : " RETURNING id");
    }

    /** Drops and creates the table, as {@code idem-testkit}'s EffectTable does; with an index on tag if asked. */
    void recreate(boolean tagIndex) throws SQLException {
      String id = dev.idem.testkit.EffectTable.identityColumn(db.dialect);
      db.execute("DROP TABLE IF EXISTS " + table);
      db.execute("CREATE TABLE " + table + " (" + id + ", tag VARCHAR(100) NOT NULL, payload TEXT NOT NULL)");
      if (tagIndex) {
        db.execute("CREATE INDEX " + table + "_tag ON " + table + " (tag)");
      }
    }

    /** The effect: one INSERT on {@code c}, in whatever transaction {@code c} is in. */
    long insert(Connection c, String tag) throws SQLException {
      if (generatedKeys) {
        try (PreparedStatement ps = c.prepareStatement(insert, Statement.RETURN_GENERATED_KEYS)) {
          ps.setString(1, tag);
          ps.setString(2, Requests.PAYLOAD);
          ps.executeUpdate();
          try (ResultSet rs = ps.getGeneratedKeys()) {
            if (!rs.next()) {
              throw new SQLException("INSERT gave no generated key");
            }
            return rs.getLong(1);
          }
        }
      }
      try (PreparedStatement ps = c.prepareStatement(insert)) {
        ps.setString(1, tag);
        ps.setString(2, Requests.PAYLOAD);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            throw new SQLException("INSERT ... RETURNING gave no row");
          }
          return rs.getLong(1);
        }
      }
    }

    long[] count() throws SQLException {
      try (Statement st = db.admin().createStatement();
          ResultSet rs = st.executeQuery("SELECT COUNT(*), COUNT(DISTINCT tag) FROM " + table)) {
        rs.next();
        return new long[] {rs.getLong(1), rs.getLong(2)};
      }
    }
  }

  /** Drops an Idem key table and creates it from the shipped schema file. */
  static void recreateKeyTable(SqlBackend db, String table) throws SQLException {
    db.execute("DROP TABLE IF EXISTS " + table);
    JdbcIdempotency.builder().table(table).build().createSchema(db.admin());
  }

  /** A client whose only resource is one connection. */
  abstract static class SqlClient implements Workload.Client {
    final Connection connection;

    SqlClient(Connection connection) {
      this.connection = connection;
    }

    @Override
    public void close() throws SQLException {
      connection.close();
    }
  }

  /** A SQL workload whose effects are the rows of an effects table of its own, counted there. */
  abstract static class EffectRows implements Workload {
    final SqlBackend db;
    final Effects effects;
    private final String id;

    EffectRows(SqlBackend db, String id, String effectsTable) {
      this.db = db;
      this.id = id;
      this.effects = new Effects(db, effectsTable);
    }

    @Override
    public final String id() {
      return id;
    }

    @Override
    public long[] effects() throws SQLException {
      return effects.count();
    }
  }

  /** One INSERT per request in auto-commit: no protection at all, the baseline of every ratio. */
  static final class NaiveInsert extends EffectRows {

    NaiveInsert(SqlBackend db) {
      super(db, NAIVE, "bench_naive");
    }

    @Override
    public void setUp() throws SQLException {
      effects.recreate(false);
    }

    @Override
    public Client client() throws SQLException {
      return new SqlClient(db.open()) {
        @Override
        public void run(String key) throws SQLException {
          effects.insert(connection, key);
        }
      };
    }
  }

  /**
   * Idem transactional mode: JdbcIdempotency.execute with the naive INSERT as the effect, in the
   * given write order (claim-first, the default, or key-last).
   */
  static final class IdemCreate extends EffectRows {
    private final String keyTable;
    private final KeySupply keys;
    private final int preload;
    private final JdbcIdempotency idem;
    private boolean loaded;

    /**
     * @param preload 0: the key table starts empty on every run; otherwise it is created once with
     *     this many completed records of the same key shape, and kept (growing) across runs
     */
    IdemCreate(SqlBackend db, String id, String keyTable, KeySupply keys, int preload) {
      this(db, id, keyTable, keys, preload, JdbcIdempotency.Strategy.CLAIM_FIRST);
    }

    IdemCreate(SqlBackend db, String id, String keyTable, KeySupply keys, int preload, JdbcIdempotency.Strategy strategy) {
      super(db, id, keyTable + "_fx");
      this.keyTable = keyTable;
      this.keys = keys;
      this.preload = preload;
      this.idem = JdbcIdempotency.builder().table(keyTable).strategy(strategy).build();
    }

    @Override
    public KeySupply keySupply() {
      return keys;
    }

    @Override
    public void setUp() throws SQLException {
      effects.recreate(false);
      if (preload == 0 || !loaded) {
        recreateKeyTable(db, keyTable);
        if (preload > 0) {
          Keys.Shape shape = keys == KeySupply.NEW_V7 ? Keys.Shape.UUID_V7 : Keys.Shape.UUID_V4;
          Preloader.load(db, keyTable, Keys.preload(shape, preload, 42));
        }
        loaded = true;
      }
    }

    /** Drops the key table (the key-shape runs do, once done, to free the space). */
    void drop() throws SQLException {
      db.execute("DROP TABLE IF EXISTS " + keyTable);
      db.execute("DROP TABLE IF EXISTS " + effects.table);
    }

    /** @return the key table's size in bytes with its indexes, where the database says it cheaply */
    long tableBytes() {
      try {
        switch (db.kind) {
          case POSTGRES:
            return Long.parseLong(db.scalar("SELECT pg_total_relation_size('" + keyTable + "')"));
          case MARIADB:
            return Long.parseLong(db.scalar("SELECT data_length + index_length FROM information_schema.tables"
                + " WHERE table_schema = DATABASE() AND table_name = '" + keyTable + "'"));
          default:
            return -1;
        }
      } catch (SQLException | RuntimeException e) {
        return -1;
      }
    }

    @Override
    public Client client() throws SQLException {
      return new SqlClient(db.open()) {
        @Override
        public void run(String key) {
          idem.execute(connection, Requests.request(key), c -> Requests.created(effects.insert(c, key)));
        }
      };
    }
  }

  /** Idem transactional mode on keys already completed: every request is a replay. */
  static final class IdemReplay implements Workload {
    private final SqlBackend db;
    private final int count;
    private final JdbcIdempotency idem = JdbcIdempotency.builder().table("bench_replay").build();
    private String[] keys;

    IdemReplay(SqlBackend db, int count) {
      this.db = db;
      this.count = count;
    }

    @Override
    public String id() {
      return IDEM_REPLAY;
    }

    @Override
    public KeySupply keySupply() {
      return KeySupply.EXISTING;
    }

    @Override
    public String[] existingKeys() {
      return keys;
    }

    @Override
    public boolean raceable() {
      return false;
    }

    @Override
    public void setUp() throws SQLException {
      if (keys == null) { // replays change nothing: one load serves every run
        recreateKeyTable(db, "bench_replay");
        keys = Keys.preload(Keys.Shape.UUID_V4, count, 7);
        Preloader.load(db, "bench_replay", keys);
      }
    }

    @Override
    public Client client() throws SQLException {
      return new SqlClient(db.open()) {
        @Override
        public void run(String key) {
          Outcome outcome = idem.execute(connection, Requests.request(key), c -> {
            throw new IllegalStateException("a replay ran the effect");
          });
          if (!outcome.replayed() || outcome.response().status() != 201) {
            throw new IllegalStateException("expected a replayed 201, got " + outcome);
          }
        }
      };
    }

    @Override
    public long[] effects() {
      return new long[] {0, 0};
    }
  }

  /** In-memory effects of the lease-mode workloads: a counter per key. */
  static final class Counter {
    private final Map<String, Integer> perKey = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    StoredResponse effect(String key) {
      perKey.merge(key, 1, Integer::sum);
      return Requests.created(ids.incrementAndGet());
    }

    void clear() {
      perKey.clear();
    }

    long[] count() {
      long total = 0;
      for (int n : perKey.values()) {
        total += n;
      }
      return new long[] {total, perKey.size()};
    }
  }

  /** Idem lease mode over JdbcLeaseStore: claim, effect (an in-memory counter), complete. */
  static final class LeaseCreateJdbc implements Workload {
    private final SqlBackend db;
    private final Counter counter = new Counter();

    LeaseCreateJdbc(SqlBackend db) {
      this.db = db;
    }

    @Override
    public String id() {
      return LEASE_CREATE;
    }

    @Override
    public void setUp() throws SQLException {
      recreateKeyTable(db, "bench_lease");
      counter.clear();
    }

    @Override
    public Client client() throws SQLException {
      Connection c = db.open();
      JdbcLeaseStore store = JdbcLeaseStore.builder(new OneConnectionDataSource(c))
          .table("bench_lease")
          .createSchema(false)
          .build();
      LeaseIdempotency engine = LeaseIdempotency.builder(store).inProgress(InProgressPolicy.waitUpTo(LEASE_WAIT)).build();
      return new SqlClient(c) {
        @Override
        public void run(String key) {
          engine.execute(Requests.request(key), ctx -> counter.effect(key));
        }
      };
    }

    @Override
    public long[] effects() {
      return counter.count();
    }
  }

  /**
   * The usual hand-rolled guard: SELECT by key, INSERT if nothing was found, two auto-commit
   * statements, on a table whose key column has an ordinary (not unique) index.
   */
  static final class CheckThenInsert extends EffectRows {

    CheckThenInsert(SqlBackend db) {
      super(db, CHECK_THEN_INSERT, "bench_check");
    }

    @Override
    public void setUp() throws SQLException {
      effects.recreate(true);
    }

    @Override
    public Client client() throws SQLException {
      String select = "SELECT id FROM " + effects.table + " WHERE tag = ?";
      return new SqlClient(db.open()) {
        @Override
        public void run(String key) throws SQLException {
          try (PreparedStatement ps = connection.prepareStatement(select)) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
              if (rs.next()) {
                return; // "already done": answer with the existing row
              }
            }
          }
          effects.insert(connection, key);
        }
      };
    }
  }

  /**
   * The best hand-written protected transaction, "key-last": the effect INSERT, then the INSERT of
   * the key row with its stored response, one commit. The key table's primary key serializes
   * duplicates: a duplicate's key INSERT waits for the winner and fails on its key, the
   * duplicate rolls back (its effect with it) and reads the winner's response. The connection
   * stays in manual-commit mode, so no auto-commit switching per request.
   */
  static final class KeyLast extends EffectRows {

    KeyLast(SqlBackend db) {
      super(db, KEY_LAST, "bench_keylast_fx");
    }

    @Override
    public void setUp() throws SQLException {
      effects.recreate(false);
      recreateKeyTable(db, "bench_keylast");
    }

    @Override
    public Client client() throws SQLException {
      String insertKey = "INSERT INTO bench_keylast"
          + " (principal, operation, idem_key, fingerprint, state, status, response, created_at, expires_at)"
          + " VALUES (?, ?, ?, ?, 'COMPLETED', ?, ?, ?, ?)";
      String select = "SELECT fingerprint, response FROM bench_keylast WHERE principal = ? AND operation = ? AND idem_key = ?";
      Connection c = db.open();
      c.setAutoCommit(false);
      return new SqlClient(c) {
        @Override
        public void run(String key) throws SQLException {
          IdempotentRequest r = Requests.request(key);
          try {
            StoredResponse response = Requests.created(effects.insert(connection, key));
            long now = System.currentTimeMillis();
            try (PreparedStatement ps = connection.prepareStatement(insertKey)) {
              ps.setString(1, r.scope().principal());
              ps.setString(2, r.scope().operation());
              ps.setString(3, r.key().value());
              ps.setString(4, r.fingerprint().hex());
              ps.setInt(5, response.status());
              ps.setBytes(6, StoredResponseCodec.encode(response));
              ps.setLong(7, now);
              ps.setLong(8, now + 86_400_000L);
              ps.executeUpdate();
            }
            connection.commit();
            return;
          } catch (SQLException e) {
            connection.rollback();
            if (!isDuplicateKey(e)) {
              throw e;
            }
          }
          try (PreparedStatement ps = connection.prepareStatement(select)) {
            ps.setString(1, r.scope().principal());
            ps.setString(2, r.scope().operation());
            ps.setString(3, r.key().value());
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                throw new SQLException("duplicate key but no row for " + key);
              }
              if (!rs.getString(1).equals(r.fingerprint().hex())) {
                throw new IdempotencyKeyReusedException(r.scope(), r.key());
              }
              StoredResponseCodec.decode(rs.getBytes(2));
            }
          } finally {
            connection.commit(); // ends the read transaction
          }
        }
      };
    }
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

  /**
   * The peer: Apache Camel's JdbcMessageIdRepository (camel-sql), as Camel's idempotent consumer
   * uses it: {@code add(key)} (its own transaction: SELECT COUNT, INSERT if absent, commit) and, if
   * the key was new, the same effect INSERT in auto-commit afterwards. Camel's own table DDL.
   */
  static final class CamelRepository extends EffectRows {
    private static final String TABLE = "bench_camel";

    CamelRepository(SqlBackend db) {
      super(db, CAMEL, "bench_camel_fx");
    }

    @Override
    public void setUp() throws SQLException {
      effects.recreate(false);
      db.execute("DROP TABLE IF EXISTS " + TABLE);
      db.execute(new JdbcMessageIdRepository().getCreateString().replace("CAMEL_MESSAGEPROCESSED", TABLE));
    }

    @Override
    public Client client() throws SQLException {
      Connection c = db.openForCamel();
      JdbcMessageIdRepository repository = new JdbcMessageIdRepository(new OneConnectionDataSource(c), "bench");
      repository.setTableName(TABLE);
      repository.setCreateTableIfNotExists(false);
      repository.start();
      return new SqlClient(c) {
        @Override
        public void run(String key) throws SQLException {
          if (repository.add(key)) {
            effects.insert(connection, key);
          }
        }

        @Override
        public void close() throws SQLException {
          try {
            repository.stop();
          } finally {
            super.close();
          }
        }
      };
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Redis

  /** Redis's floor: one SET of the request body under the key, with a 24-hour expiry. */
  static final class NaiveSet implements Workload {
    private final RedisBackend redis;

    NaiveSet(RedisBackend redis) {
      this.redis = redis;
    }

    @Override
    public String id() {
      return NAIVE_SET;
    }

    @Override
    public boolean raceable() {
      return false; // a SET on one key overwrites: duplicates cannot be counted
    }

    @Override
    public void setUp() {}

    @Override
    public Client client() {
      UnifiedJedis jedis = redis.connect();
      SetParams params = SetParams.setParams().px(86_400_000L);
      String prefix = redis.prefix + "naive:";
      return new Client() {
        @Override
        public void run(String key) {
          jedis.set(prefix + key, Requests.PAYLOAD, params);
        }

        @Override
        public void close() {
          jedis.close();
        }
      };
    }

    @Override
    public long[] effects() {
      return new long[] {0, 0};
    }
  }

  /** Idem lease mode over RedisLeaseStore: claim script, effect (an in-memory counter), complete script. */
  static final class LeaseCreateRedis implements Workload {
    private final RedisBackend redis;
    private final Counter counter = new Counter();

    LeaseCreateRedis(RedisBackend redis) {
      this.redis = redis;
    }

    @Override
    public String id() {
      return LEASE_CREATE;
    }

    @Override
    public void setUp() {
      counter.clear();
    }

    @Override
    public Client client() {
      UnifiedJedis jedis = redis.connect();
      LeaseIdempotency engine = LeaseIdempotency.builder(RedisLeaseStore.builder(jedis).keyPrefix(redis.prefix).build())
          .inProgress(InProgressPolicy.waitUpTo(LEASE_WAIT))
          .build();
      return new Client() {
        @Override
        public void run(String key) {
          engine.execute(Requests.request(key), ctx -> counter.effect(key));
        }

        @Override
        public void close() {
          jedis.close();
        }
      };
    }

    @Override
    public long[] effects() {
      return counter.count();
    }
  }

  /** Idem lease mode over RedisLeaseStore on keys already completed: every request is a replay. */
  static final class LeaseReplayRedis implements Workload {
    private final RedisBackend redis;
    private final int count;
    private final String prefix;
    private String[] keys;

    LeaseReplayRedis(RedisBackend redis, int count) {
      this.redis = redis;
      this.count = count;
      this.prefix = redis.prefix + "replay:";
    }

    @Override
    public String id() {
      return LEASE_REPLAY;
    }

    @Override
    public KeySupply keySupply() {
      return KeySupply.EXISTING;
    }

    @Override
    public String[] existingKeys() {
      return keys;
    }

    @Override
    public boolean raceable() {
      return false;
    }

    @Override
    public void setUp() {
      if (keys == null) {
        keys = Keys.preload(Keys.Shape.UUID_V4, count, 11);
        LeaseIdempotency engine = LeaseIdempotency.builder(RedisLeaseStore.builder(redis.admin()).keyPrefix(prefix).build()).build();
        long id = 0;
        for (String key : keys) {
          long n = ++id;
          engine.execute(Requests.request(key), ctx -> Requests.created(n));
        }
      }
    }

    @Override
    public Client client() {
      UnifiedJedis jedis = redis.connect();
      LeaseIdempotency engine = LeaseIdempotency.builder(RedisLeaseStore.builder(jedis).keyPrefix(prefix).build()).build();
      return new Client() {
        @Override
        public void run(String key) {
          Outcome outcome = engine.execute(Requests.request(key), ctx -> {
            throw new IllegalStateException("a replay ran the effect");
          });
          if (!outcome.replayed() || outcome.response().status() != 201) {
            throw new IllegalStateException("expected a replayed 201, got " + outcome);
          }
        }

        @Override
        public void close() {
          jedis.close();
        }
      };
    }

    @Override
    public long[] effects() {
      return new long[] {0, 0};
    }
  }
}
