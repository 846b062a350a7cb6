package dev.idem.testkit;

import dev.idem.testclusters.GaleraProcesses;
import dev.idem.testclusters.PostgresReplicationProcesses.Replication;
import dev.idem.testclusters.PostgresReplicationProcesses;
import dev.idem.testkit.SqlFailoverCampaign.Options;
import dev.idem.testkit.SqlFailoverCampaign.Report;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Transactional-mode creates per second on the replicated databases the HA suites start, next to a
 * single server started the same way ({@link GaleraProcesses#single()}, {@link Replication#NONE}):
 * {@link SqlFailoverCampaign} without failovers, one run each, 8 threads. Not part of the build: run
 * it with {@code -Didem.ha.bench="--operations=5000"} ({@code docs/reports/benchmarks.md}).
 */
@EnabledIfSystemProperty(named = "idem.ha.bench", matches = ".*")
class SqlClusterThroughputBenchmark {

  @Test
  void createsPerSecondOnEachClusterAndOnASingleServer() throws Exception {
    Options o = Options.parse((System.getProperty("idem.ha.bench") + " --failovers=0").trim().split("\\s+"));
    List<Report> reports = new ArrayList<>();
    try (GaleraProcesses single = GaleraProcesses.single()) {
      single.execute(0, "CREATE DATABASE bench");
      reports.add(SqlFailoverCampaign.run(fixed(single.jdbcUrl(0, "bench")), "MariaDB " + single.serverVersion() + ", single server", o));
    }
    try (GaleraProcesses galera = GaleraProcesses.start(3)) {
      galera.execute(0, "CREATE DATABASE bench");
      String syncWait = "&sessionVariables=" + GaleraTestCluster.SYNC_WAIT;
      reports.add(SqlFailoverCampaign.run(fixed(galera.jdbcUrl(0, "bench") + syncWait), "Galera, 3 nodes, all on node 0", o));
      reports.add(SqlFailoverCampaign.run(fixed(galera.jdbcUrlOfAll("bench", "loadbalance") + syncWait),
          "Galera, 3 nodes, spread over all (loadbalance)", o));
    }
    for (Replication r : Replication.values()) {
      try (PostgresReplicationProcesses pg = PostgresReplicationProcesses.start(r)) {
        pg.execute("CREATE DATABASE bench");
        reports.add(SqlFailoverCampaign.run(fixed(pg.jdbcUrl("bench")), "PostgreSQL " + pg.serverVersion() + ", "
            + (r == Replication.NONE ? "single server" : r.toString().toLowerCase(Locale.ROOT) + " standby"), o));
      }
    }
    System.out.println("[idem-testkit] creates/s, " + o.operations() + " operations, " + o.threads() + " threads, " + o.strategy());
    for (Report report : reports) {
      System.out.println(String.format(Locale.ROOT, "[idem-testkit] | %s | %.1f s | %,.0f |", report.label(), report.loadMillis() / 1000.0,
          report.operationsPerSecond()));
    }
  }

  private static SqlFailoverCampaign.Cluster fixed(String url) {
    return new SqlFailoverCampaign.Cluster() {
      @Override
      public String url() {
        return url;
      }

      @Override
      public String failover(int round) {
        throw new IllegalStateException("no failover in a throughput run");
      }
    };
  }
}
