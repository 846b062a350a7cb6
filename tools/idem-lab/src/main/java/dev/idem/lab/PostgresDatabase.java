package dev.idem.lab;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;

/**
 * A database of its own on a PostgreSQL server, for a service the lab starts: created by {@link
 * #create}, dropped (with its open sessions) by {@link #close()}. Not thread-safe.
 */
public final class PostgresDatabase implements AutoCloseable {

  /** The local server the HTTP lab uses by default: {@value}. */
  public static final String DEFAULT_SERVER_URL = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";

  private final String serverUrl;
  private final String name;
  private boolean dropped;

  private PostgresDatabase(String serverUrl, String name) {
    this.serverUrl = serverUrl;
    this.name = name;
  }

  /**
   * Creates a database with a new name on the server.
   *
   * @param serverUrl a JDBC URL of the server ({@code jdbc:postgresql://host:port/database?user=...}),
   *     whose user may create databases; never {@code null}
   * @param prefix the start of the new database's name: lowercase letters, digits and {@code _}
   * @return the new database
   * @throws SQLException if the server cannot be reached or refuses to create it
   * @throws IllegalArgumentException if {@code prefix} has other characters
   */
  public static PostgresDatabase create(String serverUrl, String prefix) throws SQLException {
    Objects.requireNonNull(serverUrl, "serverUrl");
    if (!prefix.matches("[a-z][a-z0-9_]*")) {
      throw new IllegalArgumentException("a database name prefix has lowercase letters, digits and _ only: " + prefix);
    }
    String name = prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
    try (Connection c = DriverManager.getConnection(serverUrl); Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + name);
    }
    return new PostgresDatabase(serverUrl, name);
  }

  /** @return the database's name */
  public String name() {
    return name;
  }

  /** @return the server's JDBC URL with this database in place of the server URL's one */
  public String jdbcUrl() {
    int query = serverUrl.indexOf('?');
    String base = query < 0 ? serverUrl : serverUrl.substring(0, query);
    String parameters = query < 0 ? "" : serverUrl.substring(query);
    return base.substring(0, base.lastIndexOf('/') + 1) + name + parameters;
  }

  /**
   * Drops the database, ending the sessions still connected to it ({@code WITH (FORCE)},
   * PostgreSQL 13 and later). Idempotent.
   *
   * @throws SQLException if the server cannot be reached or refuses
   */
  @Override
  public void close() throws SQLException {
    if (dropped) {
      return;
    }
    try (Connection c = DriverManager.getConnection(serverUrl); Statement st = c.createStatement()) {
      st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
    dropped = true;
  }
}
