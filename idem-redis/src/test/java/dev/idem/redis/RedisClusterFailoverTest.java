package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.redis.RedisClusterFailoverCampaign.Options;
import dev.idem.redis.RedisClusterFailoverCampaign.Report;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A short failover campaign ({@link RedisClusterFailoverCampaign}) on a cluster of this class's own:
 * 2,000 lease-mode operations and two master failovers (one plain, one with the replication link
 * dropped before the kill) per durability mode. With {@code RedisDurability.replicas(1, ...)} no
 * answered key runs again and every second run is a recovery; without it the count is printed, not
 * asserted (it depends on timing). Set {@code -Didem.failover.args="--operations=20000
 * --failovers=6"} for a long run.
 */
class RedisClusterFailoverTest {

  @RegisterExtension static final RedisClusterTestServer REDIS = RedisClusterTestServer.own();

  private static Options options() {
    String args = System.getProperty("idem.failover.args", "--operations=2000 --failovers=2 --dropped-link-every=2");
    return Options.parse(args.trim().split("\\s+"));
  }

  @Test
  void withOneReplicaAcknowledgingNoAnsweredKeyRunsAgainThroughFailoversIncludingADroppedLink() throws Exception {
    Options o = options();
    Report report = RedisClusterFailoverCampaign.run(REDIS.cluster(), "replicas(1)",
        RedisDurability.replicas(1, o.waitTimeout()), o);
    System.out.println("[idem-redis] failover campaign " + report);
    assertThat(report.unresolved()).as("operations without a final outcome").isZero();
    assertThat(report.answeredDuplicates()).as("answered keys whose effect ran again").isZero();
    assertThat(report.resendEffects()).as("effects run by resending answered keys").isZero();
    assertThat(report.duplicatesWithoutRecovery()).as("second effects not told they are a recovery").isZero();
  }

  @Test
  void withoutDurabilityTheDuplicatesAreReported() throws Exception {
    Options o = options();
    Report report = RedisClusterFailoverCampaign.run(REDIS.cluster(), "none", RedisDurability.none(), o);
    System.out.println("[idem-redis] failover campaign " + report);
    assertThat(report.unresolved()).as("operations without a final outcome").isZero();
    assertThat(report.failovers()).isEqualTo(o.failovers());
  }
}
