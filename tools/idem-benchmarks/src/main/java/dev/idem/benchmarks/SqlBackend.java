package dev.idem.benchmarks;

import dev.idem.jdbc.Dialect;
import dev.idem.lab.jdbc.JdbcTarget;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * One SQL database made for one harness run and removed at its end: a SQLite file in a new
 * temporary folder, or a database named {@code idem_bench_<random>} on the PostgreSQL or MariaDB
 * server. Connections come from {@link JdbcTarget#open()}, the set-up the tests and the lab use
 * (SQLite WAL and busy timeout, PostgreSQL {@code lock_timeout}, InnoDB lock wait, all 10 s), plus
 * {@code synchronous=NORMAL} on SQLite.
 */
final class SqlBackend implements AutoCloseable {

  /** The SQL databases the harness knows. */
  enum Kind {
    SQLITE("sqlite", "SQLite"),
    POSTGRES("postgres", "PostgreSQL"),
    MARIADB("mariadb", "MariaDB");

    final String id;
    final String title;

    Kind(String id, String title) {
      this.id = id;
      this.title = title;
    }
  }

  final Kind kind;
  final Dialect dialect;
  final JdbcTarget target;
  private final String url;
  private final String adminUrl;
  private final String database;
  private final Path sqliteFolder;
  private final Connection admin;
  private boolean closed;

  private SqlBackend(Kind kind, String url, String adminUrl, String database, Path sqliteFolder) throws SQLException {
    this.kind = kind;
    this.url = url;
    this.adminUrl = adminUrl;
    this.database = database;
    this.sqliteFolder = sqliteFolder;
    this.target = JdbcTarget.of(url);
    this.admin = open();
    this.dialect = Dialect.detect(admin);
  }

  /**
   * Creates the run's database.
   *
   * @throws SQLException if the server cannot be reached (the caller skips the backend)
   */
  static SqlBackend create(Kind kind, Options options) throws SQLException, IOException {
    DriverManager.setLoginTimeout(5);
    String name = "idem_bench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
    switch (kind) {
      case SQLITE: {
        Path folder = options.sqliteDir == null
            ? Files.createTempDirectory("idem-bench-")
            : Files.createTempDirectory(Files.createDirectories(options.sqliteDir), "idem-bench-");
        String url = "jdbc:sqlite:" + folder.resolve(name + ".db") + "?journal_mode=WAL&synchronous=NORMAL";
        try {
          return new SqlBackend(kind, url, null, null, folder);
        } catch (SQLException | RuntimeException e) {
          deleteFolder(folder);
          throw e;
        }
      }
      case POSTGRES:
        return onServer(kind, options.postgresUrl, name, "CREATE DATABASE " + name);
      case MARIADB:
        return onServer(kind, options.mariadbUrl, name, "CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
      default:
        throw new IllegalArgumentException(kind.toString());
    }
  }

  private static SqlBackend onServer(Kind kind, String adminUrl, String name, String ddl) throws SQLException {
    try (Connection c = DriverManager.getConnection(adminUrl); Statement st = c.createStatement()) {
      st.execute(ddl);
    }
    try {
      return new SqlBackend(kind, withDatabase(adminUrl, name), adminUrl, name, null);
    } catch (SQLException | RuntimeException e) {
      dropDatabase(kind, adminUrl, name);
      throw e;
    }
  }

  /** @return a new connection in auto-commit mode, set up like the tests' */
  Connection open() throws SQLException {
    Connection c = target.open();
    return kind == Kind.SQLITE ? synchronousNormal(c) : c;
  }

  /** Sets {@code synchronous = NORMAL} on an SQLite connection, closing it if that fails. */
  private static Connection synchronousNormal(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("PRAGMA synchronous = NORMAL");
    } catch (SQLException e) {
      c.close();
      throw e;
    }
    return c;
  }

  /**
   * A connection for Camel's repository: on SQLite its transactions begin IMMEDIATE (sqlite-jdbc's
   * {@code transaction_mode}), the configuration a Camel user on SQLite needs, or its read-then-
   * insert transaction fails with SQLITE_BUSY under concurrency; elsewhere {@link #open()}.
   */
  Connection openForCamel() throws SQLException {
    if (kind != Kind.SQLITE) {
      return open();
    }
    return synchronousNormal(JdbcTarget.of(url + "&transaction_mode=IMMEDIATE").open());
  }

  /** @return the harness's own connection, for DDL, loads and counts; one thread at a time */
  Connection admin() {
    return admin;
  }

  /** @return the product and version as the server reports it */
  String version() throws SQLException {
    switch (kind) {
      case SQLITE:
        return "SQLite " + scalar("SELECT sqlite_version()");
      case POSTGRES:
        return "PostgreSQL " + scalar("SHOW server_version");
      default:
        return scalar("SELECT VERSION()");
    }
  }

  /** @return settings that bear on write throughput, read back from the database */
  Map<String, String> settings() throws SQLException {
    Map<String, String> s = new LinkedHashMap<>();
    switch (kind) {
      case SQLITE: {
        s.put("file", url.substring("jdbc:sqlite:".length(), url.indexOf('?')));
        s.put("journal_mode", scalar("PRAGMA journal_mode"));
        String sync = scalar("PRAGMA synchronous");
        s.put("synchronous", sync + (sync.equals("1") ? " (NORMAL)" : sync.equals("2") ? " (FULL)" : ""));
        s.put("busy_timeout", scalar("PRAGMA busy_timeout") + " ms");
        break;
      }
      case POSTGRES:
        for (String name : List.of("synchronous_commit", "fsync", "wal_sync_method", "shared_buffers",
            "max_connections", "default_transaction_isolation", "lock_timeout")) {
          s.put(name, scalar("SHOW " + name));
        }
        break;
      default:
        try (Statement st = admin.createStatement();
            ResultSet rs = st.executeQuery("SHOW VARIABLES WHERE Variable_name IN ('innodb_flush_log_at_trx_commit',"
                + " 'innodb_buffer_pool_size', 'sync_binlog', 'log_bin', 'tx_isolation', 'transaction_isolation',"
                + " 'max_connections', 'innodb_lock_wait_timeout')")) {
          while (rs.next()) {
            s.put(rs.getString(1), rs.getString(2));
          }
        }
        break;
    }
    return s;
  }

  String scalar(String sql) throws SQLException {
    try (Statement st = admin.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  void execute(String sql) throws SQLException {
    try (Statement st = admin.createStatement()) {
      st.execute(sql);
    }
  }

  /** @return a description that names no credentials */
  String where() {
    return kind == Kind.SQLITE ? "SQLite file in " + sqliteFolder : kind.title + " database " + database;
  }

  /** Drops the database (or deletes the SQLite folder). Safe to call twice. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      admin.close();
    } catch (SQLException ignored) {
      // dropping the database below closes it anyway
    }
    if (sqliteFolder != null) {
      deleteFolder(sqliteFolder);
    } else {
      try {
        dropDatabase(kind, adminUrl, database);
      } catch (SQLException e) {
        System.err.println("warning: could not drop " + kind.title + " database " + database + ": " + e.getMessage());
      }
    }
  }

  private static void dropDatabase(Kind kind, String adminUrl, String name) throws SQLException {
    try (Connection c = DriverManager.getConnection(adminUrl); Statement st = c.createStatement()) {
      st.execute("DROP DATABASE IF EXISTS " + name + (kind == Kind.POSTGRES ? " WITH (FORCE)" : ""));
    }
  }

  private static void deleteFolder(Path folder) {
    try (Stream<Path> files = Files.walk(folder)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      System.err.println("warning: could not delete " + folder + ": " + e.getMessage());
    }
  }

  /** Replaces the database name in a JDBC URL (the last path segment), keeping the parameters. */
  static String withDatabase(String url, String database) {
    int query = url.indexOf('?');
    String base = query < 0 ? url : url.substring(0, query);
    String params = query < 0 ? "" : url.substring(query);
    int slash = base.lastIndexOf('/');
    return base.substring(0, slash + 1) + database + params;
  }
}
