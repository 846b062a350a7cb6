package dev.idem.benchmarks;

import java.sql.SQLException;

/** One INSERT per request in auto-commit: no protection at all, the baseline of every ratio. */
final class NaiveInsert extends EffectRows {

  NaiveInsert(SqlBackend db) {
    super(db, Workloads.NAIVE, "bench_naive");
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
