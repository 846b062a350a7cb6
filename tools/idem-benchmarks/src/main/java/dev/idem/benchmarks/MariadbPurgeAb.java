package dev.idem.benchmarks;

import dev.idem.jdbc.dialect.KeyTableSql;
import dev.idem.jdbc.dialect.MysqlDialect;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * MariaDB's purge statements side by side, without traffic: Idem's purge as it is ({@link
 * KeyTableSql#purgeFrom}, each batch from the latest expiry the batch before deleted) against the
 * one before it ({@link KeyTableSql#purge}, each batch from the front of the expiry index), each
 * deleting every expired record of its own table in batches of 1000, each batch its own
 * transaction, from one client over JDBC, as {@code JdbcIdempotency.purgeExpired} runs them.
 *
 * <p>Each round fills two key tables (the shipped schema, {@link KeyTableSql#schemaStatements}) with
 * the same {@code --expired} expired and {@code --live} live records (MariaDB's sequence engine),
 * then purges them one after the other, the order alternating from round to round. Two conditions:
 * nothing else open on the server, and a read view held open by another session for the whole
 * round ({@code START TRANSACTION WITH CONSISTENT SNAPSHOT} and a read: what a long report or
 * {@code mariadb-dump --single-transaction} holds), which keeps InnoDB's purge thread from removing
 * the deleted rows' index entries. The buffer pool is set to {@code --buffer-pool} for the run, so
 * that both tables are read from memory. A purge that has not finished after {@code --limit} seconds is
 * stopped and reported with what it deleted. The database it makes is dropped at the
 * end.
 *
 * <pre>{@code
 * ./mvnw -B -q -DskipTests package
 * java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.MariadbPurgeAb
 * }</pre>
 */
@Command(name = "MariadbPurgeAb", sortOptions = false, usageHelpWidth = 110,
    customSynopsis = "java -cp tools/idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.MariadbPurgeAb [options]",
    description = "MariaDB's purge from the latest expiry deleted against from the front of the expiry index, no traffic,"
        + " with and without a read view held open; prints a Markdown table.")
final class MariadbPurgeAb {

  @Option(names = "--expired", paramLabel = "N", defaultValue = "2000000", description = "Expired records a table (default: ${DEFAULT-VALUE}).")
  long expired;

  @Option(names = "--live", paramLabel = "N", defaultValue = "200000", description = "Live records a table (default: ${DEFAULT-VALUE}).")
  long live;

  @Option(names = "--rounds", paramLabel = "N", defaultValue = "2", description = "Rounds per condition (default: ${DEFAULT-VALUE}).")
  int rounds;

  @Option(names = "--limit", paramLabel = "SECONDS", defaultValue = "120",
      description = "A purge still running after this long is stopped (default: ${DEFAULT-VALUE}).")
  int limit;

  @Option(names = "--buffer-pool", paramLabel = "MIB", defaultValue = "4096",
      description = "innodb_buffer_pool_size for the run, MiB, so that the tables are read from memory and the statements'"
          + " own cost is measured: set with SET GLOBAL before and set back after (default: ${DEFAULT-VALUE}).")
  long bufferPoolMib;

  @Option(names = "--mariadb-url", paramLabel = "ADMIN_URL", defaultValue = "jdbc:mariadb://127.0.0.1:3306/?user=root",
      description = "A MariaDB account that may create a database (default: ${DEFAULT-VALUE}).")
  String url;

  @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
  boolean help;

  private static final int BATCH = 1000;

  /** What one purge did. */
  private record Purge(long rows, double seconds, boolean finished) {}

  /**
   * @param args see {@code --help}
   * @throws Exception when MariaDB cannot be reached or a statement fails
   */
  public static void main(String[] args) throws Exception {
    MariadbPurgeAb a = new MariadbPurgeAb();
    CommandLine cl = new CommandLine(a);
    try {
      cl.parseArgs(args);
      if (a.expired < BATCH || a.live < 0 || a.rounds < 1 || a.limit < 1 || a.bufferPoolMib < 128) {
        throw new ParameterException(cl, "--expired must be 1000 or more, --live 0 or more, --rounds and --limit 1 or more,"
            + " --buffer-pool 128 or more");
      }
    } catch (ParameterException e) {
      System.err.println("MariadbPurgeAb: " + e.getMessage());
      cl.usage(System.err);
      System.exit(2);
    }
    if (cl.isUsageHelpRequested()) {
      cl.usage(System.out);
      return;
    }
    a.run();
  }

  private void run() throws Exception {
    long pool = KeyTableLoader.queryLong(url, "SELECT @@innodb_buffer_pool_size");
    try (MariadbDatabases databases = MariadbDatabases.open(url, "purgeab")) {
      MariadbDatabases.setBufferPool(url, bufferPoolMib * 1048576);
      String dbUrl = databases.create("t");
      StringBuilder out = new StringBuilder(String.format(Locale.ROOT,
          "%n%s, innodb_buffer_pool_size %d MiB, %,d expired and %,d live records a table, batches of %d:%n%n| condition | round | statement | rows deleted | seconds | rows/s |%n"
              + "|---|---:|---|---:|---:|---:|%n", databases.version(), bufferPoolMib, expired, live, BATCH));
      for (boolean held : new boolean[] {false, true}) {
        for (int round = 1; round <= rounds; round++) {
          try (Connection c = DriverManager.getConnection(dbUrl)) {
            KeyTableSql front = fill(c, "t_front");
            KeyTableSql keyset = fill(c, "t_keyset");
            try (Connection reader = held ? DriverManager.getConnection(dbUrl) : null) {
              if (reader != null) {
                reader.setAutoCommit(false);
                try (Statement r = reader.createStatement()) {
                  r.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT");
                  r.executeQuery("SELECT count(*) FROM t_front WHERE expires_at = 0").close();
                }
              }
              String condition = held ? "a read view held open" : "nothing else open";
              boolean keysetFirst = round % 2 == 0;
              for (int i = 0; i < 2; i++) {
                boolean isKeyset = keysetFirst == (i == 0);
                Purge p = isKeyset ? purgeFrom(c, keyset) : purge(c, front);
                String line = String.format(Locale.ROOT, "| %s | %d | %s | %,d%s | %.1f | %.0f |%n", condition, round,
                    isKeyset ? "from the latest expiry deleted" : "from the front of the index", p.rows(),
                    p.finished() ? "" : " (stopped)", p.seconds(), p.rows() / p.seconds());
                System.out.print(line);
                out.append(line);
              }
              if (reader != null) {
                reader.rollback();
              }
            }
          }
        }
      }
      System.out.print(out);
    } finally {
      MariadbDatabases.setBufferPool(url, pool);
    }
  }

  /** (Re)creates {@code table} with the shipped schema and fills it; returns its statements. */
  private KeyTableSql fill(Connection c, String table) throws SQLException {
    KeyTableSql sql = MysqlDialect.INSTANCE.keyTableSql(table, c);
    if (sql.purgeFrom == null) {
      throw new IllegalStateException("not MariaDB: no purge from a bound for " + c.getMetaData().getDatabaseProductVersion());
    }
    try (Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + table);
      for (String s : sql.schemaStatements()) {
        st.execute(s);
      }
      // the expired records' expiries spread over a span that ended long ago; the live ones far ahead
      st.executeUpdate("INSERT INTO " + table + " SELECT concat('user-', seq % 5000), 'POST /notes', concat(md5(concat(seq, 'k')), '-', seq),"
          + " concat(md5(seq), md5(concat(seq, 'f'))), 'COMPLETED', NULL, NULL, 201,"
          + " repeat(concat('{\"id\":', seq, ',\"title\":\"note\"}'), 3), 0,"
          + " IF(seq <= " + expired + ", 1000000 + seq * 43, 9000000000000 + seq) FROM seq_1_to_" + (expired + live));
      st.execute("ANALYZE TABLE " + table);
    }
    return sql;
  }

  private Purge purge(Connection c, KeyTableSql sql) throws SQLException {
    long start = System.nanoTime();
    long total = 0;
    try (PreparedStatement ps = c.prepareStatement(sql.purge)) {
      while (true) {
        ps.setInt(1, BATCH);
        int n = ps.executeUpdate();
        total += n;
        if (n < BATCH) {
          return new Purge(total, seconds(start), true);
        }
        if (seconds(start) > limit) {
          return new Purge(total, seconds(start), false);
        }
      }
    }
  }

  private Purge purgeFrom(Connection c, KeyTableSql sql) throws SQLException {
    long start = System.nanoTime();
    long total = 0;
    long from = Long.MIN_VALUE;
    try (PreparedStatement ps = c.prepareStatement(sql.purgeFrom)) {
      while (true) {
        ps.setLong(1, from);
        ps.setInt(2, BATCH);
        long n = 0;
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            n += rs.getLong(1);
            from = Math.max(from, rs.getLong(2));
          }
        }
        total += n;
        if (n < BATCH) {
          return new Purge(total, seconds(start), true);
        }
        if (seconds(start) > limit) {
          return new Purge(total, seconds(start), false);
        }
      }
    }
  }

  private static double seconds(long start) {
    return (System.nanoTime() - start) / 1e9;
  }
}
