package dev.idem.lab.jdbc;

import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A table of effects for tests and the lab: each row is one effect (a created record), tagged so
 * that one table serves many scenarios. Rows are counted in the database, so an assertion on {@link
 * #count(Connection, String)} checks the stored state, not a response.
 *
 * <p>Immutable and thread-safe; each {@link Connection} is used by one thread at a time.
 */
public final class EffectTable {

  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");

  private final String name;

  /**
   * @param name a plain SQL identifier
   * @throws IllegalArgumentException if {@code name} is not a plain identifier
   */
  public EffectTable(String name) {
    Objects.requireNonNull(name, "name");
    if (!IDENTIFIER.matcher(name).matches()) {
      throw new IllegalArgumentException("not a plain SQL identifier: " + name);
    }
    this.name = name;
  }

  /** @return the table name */
  public String name() {
    return name;
  }

  /** Drops the table if it exists and creates it empty. */
  public void recreate(Connection c) throws SQLException {
    Dialect dialect = Dialect.detect(c);
    String id = identityColumn(dialect);
    try (Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + name);
      st.execute("CREATE TABLE " + name + " (" + id + ", tag VARCHAR(100) NOT NULL, payload TEXT NOT NULL)");
    }
  }

  /**
   * @param dialect the database
   * @return the column definition of an auto-generated {@code BIGINT} primary key named {@code id}
   *     in that dialect
   */
  public static String identityColumn(Dialect dialect) {
    return dialect.identityColumn("id");
  }

  /** Drops the table if it exists. */
  public void drop(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + name);
    }
  }

  /**
   * Inserts one effect on {@code c}, inside whatever transaction {@code c} is in.
   *
   * @return the new row's id
   */
  public long insert(Connection c, String tag, String payload) throws SQLException {
    if (!Dialect.detect(c).supportsReturning()) {
      // MySQL and H2 have no INSERT ... RETURNING; their drivers return generated keys.
      try (PreparedStatement ps =
          c.prepareStatement("INSERT INTO " + name + " (tag, payload) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
        ps.setString(1, tag);
        ps.setString(2, payload);
        ps.executeUpdate();
        try (ResultSet rs = ps.getGeneratedKeys()) {
          if (!rs.next()) {
            throw new SQLException("INSERT gave no generated key");
          }
          return rs.getLong(1);
        }
      }
    }
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO " + name + " (tag, payload) VALUES (?, ?) RETURNING id")) {
      ps.setString(1, tag);
      ps.setString(2, payload);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new SQLException("INSERT ... RETURNING gave no row");
        }
        return rs.getLong(1);
      }
    }
  }

  /** @return how many effects with {@code tag} are stored, as committed and visible to {@code c} */
  public long count(Connection c, String tag) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + name + " WHERE tag = ?")) {
      ps.setString(1, tag);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
