package dev.idem.benchmarks;

import dev.idem.jdbc.Dialect;
import dev.idem.lab.jdbc.EffectTable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** The effect every SQL workload performs: one row in a table of its own, tagged with the key. */
final class Effects {
  final String table;
  private final SqlBackend db;
  private final String insert;
  private final boolean generatedKeys;

  Effects(SqlBackend db, String table) {
    this.db = db;
    this.table = table;
    this.generatedKeys = !db.dialect.supportsReturning(); // MySQL, MariaDB, H2: no INSERT ... RETURNING
    this.insert = "INSERT INTO " + table + " (tag, payload) VALUES (?, ?)" + (generatedKeys ? "" : " RETURNING id");
  }

  /** Drops and creates the table, as idem-lab's {@link EffectTable} does; with an index on tag if asked. */
  void recreate(boolean tagIndex) throws SQLException {
    String id = EffectTable.identityColumn(db.dialect);
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
