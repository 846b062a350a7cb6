package dev.idem.cli.queue;

import dev.idem.lab.jdbc.JdbcTarget;
import dev.idem.lab.jdbc.SimpleDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * The queue lab's database: a JDBC URL, a data source that opens a new connection per call,
 * prepared to wait for locks ({@link JdbcTarget#open()}, with its default lock wait), and the
 * effects table the lab counts. Used by the lab and by its child processes. Thread-safe.
 */
final class LabDatabase extends SimpleDataSource {

  /** The effects every consumer and request of the lab writes, one row per effect. */
  static final String EFFECTS_TABLE = "idem_qlab_effects";

  private final JdbcTarget target;

  LabDatabase(String url) {
    this.target = JdbcTarget.of(url);
  }

  String url() {
    return target.url();
  }

  @Override
  public Connection getConnection() throws SQLException {
    return target.open();
  }

  /** @return the product and version, for example {@code "SQLite 3.54.1"} */
  String describe() throws SQLException {
    return target.describe();
  }

  /** Drops the lab's tables (effects, keys, outbox) and creates the effects table again. */
  void recreate(String... otherTables) throws SQLException {
    try (Connection c = getConnection(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + EFFECTS_TABLE);
      for (String t : otherTables) {
        st.execute("DROP TABLE IF EXISTS " + t);
      }
      st.execute("CREATE TABLE " + EFFECTS_TABLE + " (id VARCHAR(36) PRIMARY KEY, scenario VARCHAR(40) NOT NULL,"
          + " variant VARCHAR(20) NOT NULL, source VARCHAR(200))");
    }
  }

  /** Writes one effect through {@code c}, in whatever transaction {@code c} is in. */
  static void insertEffect(Connection c, String scenario, String variant, String source) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + EFFECTS_TABLE + " (id, scenario, variant, source) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, UUID.randomUUID().toString());
      ps.setString(2, scenario);
      ps.setString(3, variant);
      ps.setString(4, source == null ? null : source.length() > 200 ? source.substring(0, 200) : source);
      ps.executeUpdate();
    }
  }

  /** Writes one effect in a transaction of its own (auto-commit). */
  void insertEffect(String scenario, String variant, String source) throws SQLException {
    try (Connection c = getConnection()) {
      insertEffect(c, scenario, variant, source);
    }
  }

  /** @return the effects committed for the scenario and variant, counted with SQL */
  long countEffects(String scenario, String variant) throws SQLException {
    try (Connection c = getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT COUNT(*) FROM " + EFFECTS_TABLE + " WHERE scenario = ? AND variant = ?")) {
      ps.setString(1, scenario);
      ps.setString(2, variant);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
