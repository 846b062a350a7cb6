package dev.idem.spring.purge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spring.BootLine;
import dev.idem.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Regression: a WebFlux application keeping its keys in the R2DBC key table (transactional mode,
 * the default beside a ConnectionFactory, or lease mode) had a scheduled purge of the in-memory
 * store only, so its table grew without bound. The purge reaches the table now, with the table's
 * record as the lock shared by the instances.
 */
@ExtendWith(OutputCaptureExtension.class)
class PurgeOnR2dbcTest {

  @RegisterExtension static final TestDatabase DB = TestDatabase.postgres();

  @Test
  void theScheduledPurgeDeletesExpiredRecordsOfTheR2dbcKeyTable(CapturedOutput output) {
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.r2dbc())))
        .withPropertyValues("spring.r2dbc.url=" + DB.r2dbcUrl(), "idem.principal=shared")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed().hasSingleBean(IdemPurgeScheduler.class);
          assertThat(output.getOut()).contains("the key table of R2dbcLeaseStore[table=idem_keys");
          try (Connection c = DB.target().open(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO idem_keys (principal, operation, idem_key, fingerprint, state, status, response, created_at,"
                + " expires_at) VALUES ('p', 'POST /x', 'expired', repeat('a', 64), 'COMPLETED', 201, 'x', 0, 1)");
          }
          long removed = ctx.getBean(IdemPurgeScheduler.class).purgeIfElected();

          assertThat(removed).isGreaterThanOrEqualTo(1);
          assertThat(output.getOut()).doesNotContain("the scheduled purge failed");
          try (Connection c = DB.target().open(); Statement st = c.createStatement();
              ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'expired'")) {
            rs.next();
            assertThat(rs.getLong(1)).isZero();
          }
        });
  }
}
