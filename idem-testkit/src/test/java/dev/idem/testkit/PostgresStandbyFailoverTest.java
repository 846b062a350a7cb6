package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testkit.SqlFailoverCampaign.Options;
import dev.idem.testkit.SqlFailoverCampaign.Report;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A short failover campaign ({@link SqlFailoverCampaign}) on a PostgreSQL primary with a standby,
 * synchronous and asynchronous: 1,500 transactional-mode creates through a URL with both servers and
 * {@code targetServerType=primary} while the primary is killed with {@code kill -9}, the standby
 * promoted ({@code pg_ctl promote}) and the old primary rebuilt as the new standby. With the
 * synchronous standby no acknowledged answer may be lost; with the asynchronous one the count is
 * printed, not asserted (it depends on what the standby had received at the kill). Neither may
 * commit a second effect for a key. {@code -Didem.ha.args="--operations=10000 --failovers=5"} runs a
 * long one ({@code docs/reports/reliability.md}).
 */
class PostgresStandbyFailoverTest {

  @RegisterExtension static final PostgresStandbyTestServers SYNC = PostgresStandbyTestServers.synchronous();
  @RegisterExtension static final PostgresStandbyTestServers ASYNC = PostgresStandbyTestServers.asynchronous();

  static SqlFailoverCampaign.Cluster postgres(PostgresStandbyTestServers pg) {
    return new SqlFailoverCampaign.Cluster() {
      @Override
      public String url() {
        return pg.url();
      }

      @Override
      public String failover(int round) {
        long t0 = System.nanoTime();
        pg.servers().killPrimary();
        pg.servers().promote();
        long promoted = System.nanoTime();
        pg.servers().rebuildStandby();
        return String.format(java.util.Locale.ROOT, "primary killed, standby promoted in %.1f s, new standby streaming after %.1f s more",
            (promoted - t0) / 1e9, (System.nanoTime() - promoted) / 1e9);
      }
    };
  }

  @Test
  void withASynchronousStandbyAFailoverLosesNoAcknowledgedAnswer() throws Exception {
    Options o = GaleraFailoverTest.options();
    Report report = SqlFailoverCampaign.run(postgres(SYNC), "postgresql-sync/" + o.strategy(), o);
    System.out.println("[idem-testkit] failover campaign " + report);
    report.assertNothingAcknowledgedWasLost(o);
  }

  @Test
  void withAnAsynchronousStandbyTheAcknowledgedAnswersLostAreReported() throws Exception {
    Options o = GaleraFailoverTest.options();
    Report report = SqlFailoverCampaign.run(postgres(ASYNC), "postgresql-async/" + o.strategy(), o);
    System.out.println("[idem-testkit] failover campaign " + report);
    report.assertEveryFailoverRanAndNoKeyRanTwice(o);
    assertThat(report.reExecutedOnResend()).as("a lost answer's key runs again on its resend, and only that").isEqualTo(report.acknowledgedLost());
  }
}
