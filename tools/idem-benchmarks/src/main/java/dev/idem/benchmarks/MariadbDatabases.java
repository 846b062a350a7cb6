package dev.idem.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * The MariaDB databases of one benchmark run ({@link PurgeLoad}, {@link ScaleLoad}): a database per
 * variant on the server of the admin URL, made with the character set the shipped schema expects
 * ({@code utf8mb4}, binary collation: keys compare byte for byte) and dropped by {@link #close()};
 * and the key table's sizes as the server estimates them. Not thread-safe: one benchmark's main
 * thread uses it.
 */
final class MariadbDatabases implements AutoCloseable {

  /**
   * The key table's sizes in bytes, InnoDB's estimates ({@code information_schema.tables} and
   * {@code mysql.innodb_index_stats}, both refreshed by {@code ANALYZE TABLE}): whole pages
   * allocated, not bytes of rows.
   *
   * @param rows the rows, counted
   * @param data {@code data_length}: the clustered primary key, which holds the rows
   * @param indexes {@code index_length}: the secondary indexes
   * @param primaryKey the {@code PRIMARY} index's pages (the same B-tree as {@code data})
   * @param expiryIndex the {@code idem_keys_expires_at} index's pages
   */
  record TableBytes(long rows, long data, long indexes, long primaryKey, long expiryIndex) {}

  private final String adminUrl;
  private final String prefix;
  private final Connection admin;
  private final Statement statement;
  private final List<String> created = new ArrayList<>();

  private MariadbDatabases(String adminUrl, String prefix, Connection admin, Statement statement) {
    this.adminUrl = adminUrl;
    this.prefix = prefix;
    this.admin = admin;
    this.statement = statement;
  }

  /**
   * Connects to the server; makes nothing yet.
   *
   * @param adminUrl a JDBC URL of the server with a user that may create and drop databases, such
   *     as {@code jdbc:mariadb://127.0.0.1:3306/?user=root}; never {@code null}
   * @param tool the benchmark's name, part of every database's name (letters and digits)
   * @return the open set, empty
   * @throws SQLException if the server cannot be reached
   */
  static MariadbDatabases open(String adminUrl, String tool) throws SQLException {
    Connection c = DriverManager.getConnection(adminUrl);
    try {
      return new MariadbDatabases(adminUrl, "idem_" + tool.toLowerCase(Locale.ROOT) + "_"
          + UUID.randomUUID().toString().replace("-", "").substring(0, 8) + "_", c, c.createStatement());
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** @return the server's {@code version()}, such as {@code 11.4.2-MariaDB-ubu2404}, or a note that it cannot be read */
  String version() {
    return HttpLoad.query(adminUrl, "SELECT version()");
  }

  /**
   * Makes a database for one variant.
   *
   * @param name the variant's name (letters, digits, {@code -} and {@code _})
   * @return the database's JDBC URL: the admin URL with the database's name in place of its path
   * @throws IllegalStateException if the database cannot be made
   */
  String create(String name) {
    String db = prefix + name.replace('-', '_');
    try {
      statement.execute("CREATE DATABASE " + db + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create database " + db + ": " + e.getMessage(), e);
    }
    created.add(db);
    return HttpLoad.withDatabase(adminUrl, db);
  }

  /**
   * Runs {@code ANALYZE TABLE idem_keys}, then reads the key table's sizes.
   *
   * @param url the database (the key table's schema is the URL's database)
   * @return the sizes
   * @throws SQLException if the table or the statistics cannot be read
   */
  static TableBytes sizes(String url) throws SQLException {
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
      st.execute("ANALYZE TABLE idem_keys");
      long rows = KeyTableLoader.queryLong(url, "SELECT count(*) FROM idem_keys");
      long data;
      long indexes;
      try (ResultSet rs = st.executeQuery("SELECT data_length, index_length FROM information_schema.tables"
          + " WHERE table_schema = DATABASE() AND table_name = 'idem_keys'")) {
        rs.next();
        data = rs.getLong(1);
        indexes = rs.getLong(2);
      }
      long primary = 0;
      long expiry = 0;
      try (ResultSet rs = st.executeQuery("SELECT index_name, stat_value * @@innodb_page_size FROM mysql.innodb_index_stats"
          + " WHERE database_name = DATABASE() AND table_name = 'idem_keys' AND stat_name = 'size'")) {
        while (rs.next()) {
          switch (rs.getString(1)) {
            case "PRIMARY" -> primary = rs.getLong(2);
            case "idem_keys_expires_at" -> expiry = rs.getLong(2);
            default -> { }
          }
        }
      }
      return new TableBytes(rows, data, indexes, primary, expiry);
    }
  }

  /**
   * Drops every database {@link #create} made, then closes the connection.
   *
   * @throws SQLException if a database cannot be dropped (the others are still tried)
   */
  @Override
  public void close() throws SQLException {
    SQLException failed = null;
    try {
      for (String db : created) {
        try {
          statement.execute("DROP DATABASE IF EXISTS " + db);
        } catch (SQLException e) {
          if (failed == null) {
            failed = e;
          } else {
            failed.addSuppressed(e);
          }
        }
      }
    } finally {
      admin.close();
    }
    if (failed != null) {
      throw failed;
    }
  }

  /**
   * Sets the server's {@code innodb_buffer_pool_size} ({@code SET GLOBAL}, which lasts until the
   * server restarts or it is set again) and waits up to a minute for the resize to finish.
   *
   * @param adminUrl a JDBC URL of the server with a user that may set global variables
   * @param bytes the new size, bytes
   * @throws IllegalStateException if the resize has not finished after a minute
   * @throws Exception if the server cannot be reached or refuses the size
   */
  static void setBufferPool(String adminUrl, long bytes) throws Exception {
    try (Connection c = DriverManager.getConnection(adminUrl); Statement st = c.createStatement()) {
      st.execute("SET GLOBAL innodb_buffer_pool_size = " + bytes);
    }
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      String status;
      try (Connection c = DriverManager.getConnection(adminUrl); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
              + " WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_RESIZE_STATUS'")) {
        status = rs.next() ? String.valueOf(rs.getString(1)) : "";
      }
      String lower = status.toLowerCase(Locale.ROOT);
      if (lower.contains("fail")) {
        throw new IllegalStateException("MariaDB's buffer pool resize to " + bytes + " bytes failed: " + status);
      }
      // empty once done (10.11 here) or "Completed resizing buffer pool at ..." (other versions);
      // the server rounds the size up to whole chunks
      long size = KeyTableLoader.queryLong(adminUrl, "SELECT @@innodb_buffer_pool_size");
      // the pages the pool has, which follow the variable once the resize has run
      long pages = KeyTableLoader.queryLong(adminUrl, "SELECT VARIABLE_VALUE * @@innodb_page_size FROM information_schema.GLOBAL_STATUS"
          + " WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_TOTAL'");
      if ((lower.isEmpty() || lower.startsWith("completed")) && size >= bytes && Math.abs(pages - size) <= size / 10) {
        System.out.printf(Locale.ROOT, "MariaDB innodb_buffer_pool_size is %d MiB%n", size / 1048576);
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("MariaDB's buffer pool resize to " + bytes + " bytes did not finish in a minute: " + status);
      }
      Thread.sleep(1_000);
    }
  }
}
