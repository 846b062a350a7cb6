package dev.idem.benchmarks;

import java.sql.SQLException;

/** A SQL workload whose effects are the rows of an effects table of its own, counted there. */
abstract class EffectRows implements Workload {
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
