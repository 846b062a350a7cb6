package dev.idem.benchmarks;

import dev.idem.jdbc.JdbcIdempotency;
import java.sql.SQLException;

/**
 * Idem transactional mode: JdbcIdempotency.execute with the naive INSERT as the effect, in the
 * given write order (claim-first unless named, so that the report's rows keep measuring the same
 * order; key-last is the library's default).
 */
final class IdemCreate extends EffectRows {
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
      Workloads.recreateKeyTable(db, keyTable);
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
        idem.execute(connection, Requests.request(key), ctx -> Requests.created(effects.insert(ctx.connection(), key)));
      }
    };
  }
}
