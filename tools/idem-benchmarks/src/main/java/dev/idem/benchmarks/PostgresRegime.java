package dev.idem.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * One PostgreSQL regime of a side-by-side benchmark ({@link HttpLoad}, {@link GrpcLoad}): a
 * database per variant on the server of the admin URL, made before the variant starts (with {@code
 * synchronous_commit = off} in the asynchronous regime) and dropped afterwards, the server's
 * version and the setting as each variant's URL reads it back in the report's notes, and the CPU
 * sources of the whole server and of a variant's own backends.
 */
final class PostgresRegime {

  /**
   * The regime's heading in a report.
   *
   * @param title the server's version and the regime
   * @param dbCpu what the database CPU column measures
   * @param notes lines under the heading; more are added once the variants ran
   */
  record Heading(String title, String dbCpu, List<String> notes) {}

  /** Runs the variants of one regime, given where their databases are and how to read the CPU. */
  interface Measure {
    /**
     * @param urlFor makes a variant's database and returns its JDBC URL, given the variant's name
     * @param setting reads {@code synchronous_commit} back on a variant's URL
     * @param dbCpu the whole server's CPU, or {@code null} without /proc
     * @param ownDb the CPU of the backends on a variant's database, or {@code null} without /proc
     * @return "variant: setting" for each variant
     */
    List<String> run(Function<String, String> urlFor, Function<String, String> setting, ProcCpu.@Nullable Source dbCpu,
        @Nullable Function<String, ProcCpu.Source> ownDb) throws Exception;
  }

  private PostgresRegime() {}

  /**
   * @param tool the benchmark's name, for the message when PostgreSQL cannot be reached
   * @param regime {@code postgres} or {@code postgres-async}, for that message
   * @param adminUrl where databases are made
   * @param async whether each variant's database gets {@code synchronous_commit = off}
   * @param cpu whether /proc can be read
   * @param unit what a variant is in the report's words ({@code service}, {@code server})
   * @param register told the heading before the variants run (its notes then grow)
   * @param measure runs the variants
   * @throws Exception what {@code measure} throws, or dropping a database fails
   */
  static void run(String tool, String regime, String adminUrl, boolean async, boolean cpu, String unit, Consumer<Heading> register,
      Measure measure) throws Exception {
    String prefix = "idem_" + tool.toLowerCase(java.util.Locale.ROOT) + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8) + "_";
    List<String> created = new ArrayList<>();
    try (Connection admin = DriverManager.getConnection(adminUrl);
        Statement st = admin.createStatement()) {
      String version;
      try (ResultSet rs = st.executeQuery("SELECT version()")) {
        rs.next();
        version = rs.getString(1).replaceAll(" on .*", "");
      }
      List<String> notes = new ArrayList<>();
      register.accept(new Heading(version + (async ? " (a database per " + unit + ", synchronous_commit = off)"
          : " (a database per " + unit + ", default settings)"), cpu ? "every `postgres` process + the postmaster's reaped children"
          : "n/a", notes));
      if (async) {
        notes.add("Every variant's database got `ALTER DATABASE <db> SET synchronous_commit = off` before its " + unit + " started:"
            + " a commit returns before its WAL reaches the disk (the WAL writer flushes it within a few hundred ms), so the"
            + " commit's disk wait no longer hides CPU.");
      }
      try {
        List<String> values = measure.run(name -> {
          String db = prefix + name.replace('-', '_');
          try {
            st.execute("CREATE DATABASE " + db);
            created.add(db);
            if (async) {
              st.execute("ALTER DATABASE " + db + " SET synchronous_commit = off");
            }
          } catch (SQLException e) {
            throw new IllegalStateException("cannot create database " + db + ": " + e.getMessage(), e);
          }
          return HttpLoad.withDatabase(adminUrl, db);
        }, url -> HttpLoad.query(url, "SHOW synchronous_commit"), cpu ? ProcCpu.postgres() : null,
            cpu ? name -> ProcCpu.postgresBackends(prefix + name.replace('-', '_')) : null);
        notes.add("`synchronous_commit` as a new connection on each " + unit + "'s own URL reads it, after the " + unit
            + "s started: " + String.join(", ", values) + ".");
      } finally {
        for (String db : created) {
          st.execute("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
        }
      }
    } catch (SQLException e) {
      System.err.println(tool + ": " + regime + " skipped, PostgreSQL not reachable at " + adminUrl + ": " + e.getMessage());
    }
  }
}
