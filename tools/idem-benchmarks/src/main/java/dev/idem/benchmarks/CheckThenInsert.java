package dev.idem.benchmarks;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The usual hand-rolled guard: SELECT by key, INSERT if nothing was found, two auto-commit
 * statements, on a table whose key column has an ordinary (not unique) index.
 */
final class CheckThenInsert extends EffectRows {

  CheckThenInsert(SqlBackend db) {
    super(db, Workloads.CHECK_THEN_INSERT, "bench_check");
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
