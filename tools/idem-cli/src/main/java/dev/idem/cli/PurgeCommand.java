package dev.idem.cli;

import dev.idem.core.IdemException;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.lab.Lab;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code idem purge}: deletes expired idempotency records in bounded batches. */
@Command(
    name = "purge",
    mixinStandardHelpOptions = true,
    versionProvider = IdemCommand.Version.class,
    description = {
      "Deletes expired idempotency records in batches that each commit on their own, and prints how many it removed.",
      "Expired records already count as absent; purging reclaims space. Exits 2 if the database cannot be used.",
      "A record expires, in transactional mode, between the retention and the retention + 1 minute after its completion"
          + " (JdbcIdempotency.EXPIRY_MARGIN); in lease mode, between the retention and the retention + the lease."
          + " Publish that window as the API's key expiry (draft-ietf-httpapi-idempotency-key-header, section 2.3)."
    })
final class PurgeCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--db", required = true, paramLabel = "<JDBC URL>", description = "The database holding the key table.")
  String db;

  @Option(names = "--table", defaultValue = "idem_keys", description = "The key table (default: ${DEFAULT-VALUE}).")
  String table;

  @Option(names = "--batch", defaultValue = "1000", paramLabel = "N", description = "Records per batch, 1 to 100000 (default: ${DEFAULT-VALUE}).")
  int batch;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    JdbcIdempotency idem;
    try {
      idem = JdbcIdempotency.builder().table(table).createSchema(false).build();
    } catch (IllegalArgumentException e) {
      err.println("idem purge: " + e.getMessage());
      return 2;
    }
    if (batch < 1 || batch > 100_000) {
      err.println("idem purge: --batch must be between 1 and 100000, was " + batch);
      return 2;
    }
    try (Connection c = DriverManager.getConnection(db)) {
      if (!idem.tableExists(c)) {
        err.println("idem purge: there is no table " + table + " in " + Lab.redact(db)
            + " (check --db and --table)");
        return 2;
      }
      long removed = idem.purgeExpired(c, batch);
      out.println("removed " + removed + " expired record" + (removed == 1 ? "" : "s") + " from " + table);
      out.flush();
      return 0;
    } catch (SQLException | IdemException e) {
      err.println("idem purge: cannot purge " + table + " on " + Lab.redact(db) + ": " + e.getMessage());
      return 2;
    }
  }
}
