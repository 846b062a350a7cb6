package dev.idem.benchmarks;

import dev.idem.core.Outcome;
import dev.idem.jdbc.JdbcIdempotency;
import java.sql.SQLException;

/** Idem transactional mode on keys already completed: every request is a replay. */
final class IdemReplay implements Workload {
  private final SqlBackend db;
  private final int count;
  private final JdbcIdempotency idem = JdbcIdempotency.builder().table("bench_replay").strategy(JdbcIdempotency.Strategy.CLAIM_FIRST).build();
  private String[] keys;

  IdemReplay(SqlBackend db, int count) {
    this.db = db;
    this.count = count;
  }

  @Override
  public String id() {
    return Workloads.IDEM_REPLAY;
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
      Workloads.recreateKeyTable(db, "bench_replay");
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
