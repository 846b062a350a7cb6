package dev.idem.spring.purge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.spring.IdemProperties;
import dev.idem.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * Regression: the purge's lock record was claimed with lease = retention = the interval, and a JDBC
 * claim lives lease + retention: the record outlived the next run, so one instance purged every
 * second interval. Now it lives 0.9 of the interval (lease 0.4, retention 0.5).
 */
class PurgeLockExpiryTest {

  @RegisterExtension static final TestDatabase PG = TestDatabase.postgres();

  private static IdemPurgeScheduler instance(JdbcIdempotency keys, DataSource ds, Duration interval) {
    IdemProperties.Purge s = new IdemProperties.Purge();
    s.setInterval(interval);
    return new IdemPurgeScheduler(keys, ds, null, JdbcLeaseStore.builder(ds).table(keys.table()).createSchema(false).build(),
        keys.table(), s);
  }

  private static JdbcIdempotency keys(DataSource ds) throws Exception {
    JdbcIdempotency keys = JdbcIdempotency.builder().dataSource(ds).build();
    try (Connection c = ds.getConnection()) {
      keys.createSchema(c);
      try (Statement s = c.createStatement()) {
        s.executeUpdate("DELETE FROM idem_keys"); // each test starts without a lock record
      }
    }
    return keys;
  }

  /** How long the lock record still lives, by the database's clock, in seconds. */
  private static long lockSecondsLeft(DataSource ds) throws Exception {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT expires_at - CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
            + " FROM idem_keys WHERE principal = 'idem:scheduler' AND operation = 'idem:purge'")) {
      assertThat(rs.next()).isTrue();
      return rs.getLong(1) / 1000;
    }
  }

  @Test
  void theCompletedLockRecordIsKeptForTheRestOfTheIntervalNotTwoIntervals() throws Exception {
    DataSource ds = new DriverManagerDataSource(PG.url());
    JdbcIdempotency keys = keys(ds);
    IdemPurgeScheduler one = instance(keys, ds, Duration.ofHours(1));
    assertThat(one.purgeIfElected()).isGreaterThanOrEqualTo(0);
    long left = lockSecondsLeft(ds);
    System.out.println("PurgeLockExpiryTest: lock record lives another " + left + " s after a purge with interval PT1H");
    assertThat(left).as("seconds the lock record lives after the purge (interval 3600 s)").isLessThanOrEqualTo(3240);
  }
}
