package dev.idem.testkit;


import dev.idem.testclusters.GaleraProcesses;
import dev.idem.testkit.SqlFailoverCampaign.Options;
import dev.idem.testkit.SqlFailoverCampaign.Report;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A short failover campaign ({@link SqlFailoverCampaign}) on the three-node Galera Cluster: 1,500
 * transactional-mode creates spread over the nodes (Connector/J {@code loadbalance}, {@code
 * wsrep_sync_wait=1}) while one node is killed with {@code kill -9}, left down for 3 s (the others
 * evict it) and restarted. No acknowledged answer may be lost, no key may commit a second effect.
 * {@code -Didem.ha.args="--operations=10000 --failovers=5"} runs a long one ({@code docs/reports/reliability.md}).
 */
class GaleraFailoverTest {

  @RegisterExtension static final GaleraTestCluster GALERA = GaleraTestCluster.shared();

  static Options options() {
    return Options.parse(System.getProperty("idem.ha.args", "--operations=1500 --failovers=1").trim().split("\\s+"));
  }

  static SqlFailoverCampaign.Cluster galera(GaleraTestCluster galera) {
    return new SqlFailoverCampaign.Cluster() {
      @Override
      public String url() {
        return galera.cluster().jdbcUrlOfAll(galera.database(), "loadbalance") + "&sessionVariables=" + GaleraTestCluster.SYNC_WAIT
            + "&connectTimeout=2000";
      }

      @Override
      public String failover(int round) throws Exception {
        GaleraProcesses cluster = galera.cluster();
        int node = round % cluster.size();
        cluster.kill(node);
        Thread.sleep(3000); // under load on the other two, which evict it after evs.suspect_timeout (2 s)
        cluster.restart(node);
        cluster.awaitClusterSize(cluster.size(), 120_000);
        return "node " + node + " killed and restarted";
      }
    };
  }

  @Test
  void killingANodeUnderLoadLosesNoAcknowledgedAnswerAndCommitsNoSecondEffect() throws Exception {
    Options o = options();
    Report report = SqlFailoverCampaign.run(galera(GALERA), "galera/" + o.strategy(), o);
    System.out.println("[idem-testkit] failover campaign " + report);
    report.assertNothingAcknowledgedWasLost(o);
  }
}
