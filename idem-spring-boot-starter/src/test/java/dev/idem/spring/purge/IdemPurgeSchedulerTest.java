package dev.idem.spring.purge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.IdempotentRequest;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.JdbcLeaseStore;
import dev.idem.spring.BootLine;
import dev.idem.spring.IdemProperties;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.sqlite.SQLiteDataSource;

/**
 * The scheduled purge: several instances over one key table, one purges per interval, expired
 * records go and live ones stay; the start-up says what purges, or that nothing does.
 */
@ExtendWith(OutputCaptureExtension.class)
class IdemPurgeSchedulerTest {

  @TempDir Path dir;

  private SQLiteDataSource dataSource() {
    SQLiteDataSource ds = new SQLiteDataSource();
    ds.setUrl("jdbc:sqlite:" + dir.resolve("keys.db") + "?journal_mode=WAL&busy_timeout=10000");
    return ds;
  }

  private static IdemProperties.Purge every(Duration interval) {
    IdemProperties.Purge s = new IdemProperties.Purge();
    s.setInterval(interval);
    s.setBatchSize(2); // several batches
    return s;
  }

  /** Five records expired (their expiry moved into the past), three live. */
  private static JdbcIdempotency keysWithExpiredAndLive(SQLiteDataSource ds) throws Exception {
    JdbcIdempotency keys = JdbcIdempotency.builder().dataSource(ds).build();
    for (int i = 0; i < 8; i++) {
      keys.execute(IdempotentRequest.ofJson("alice", "POST /notes", "k-" + i, ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8)),
          ctx -> StoredResponse.of(201, "{}"));
    }
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE idem_keys SET expires_at = 0 WHERE idem_key IN ('k-0', 'k-1', 'k-2', 'k-3', 'k-4')");
    }
    return keys;
  }

  private static List<String> keysLeft(SQLiteDataSource ds) throws Exception {
    List<String> left = new ArrayList<>();
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT idem_key FROM idem_keys WHERE principal = 'alice' ORDER BY idem_key")) {
      while (rs.next()) {
        left.add(rs.getString(1));
      }
    }
    return left;
  }

  private static IdemPurgeScheduler instance(JdbcIdempotency keys, SQLiteDataSource ds, Duration interval) {
    return new IdemPurgeScheduler(keys, ds, null, JdbcLeaseStore.builder(ds).table(keys.table()).createSchema(false).build(),
        keys.table(), every(interval));
  }

  @Test
  void ofThreeInstancesAskingAtOnceOnePurgesTheExpiredRecordsAndTheLiveOnesStay() throws Exception {
    SQLiteDataSource ds = dataSource();
    JdbcIdempotency keys = keysWithExpiredAndLive(ds);
    List<IdemPurgeScheduler> instances = List.of(instance(keys, ds, Duration.ofHours(1)), instance(keys, ds, Duration.ofHours(1)),
        instance(keys, ds, Duration.ofHours(1)));
    CyclicBarrier barrier = new CyclicBarrier(instances.size());
    ExecutorService pool = Executors.newFixedThreadPool(instances.size());
    List<Long> removed = new ArrayList<>();
    try {
      List<Future<Long>> runs = new ArrayList<>();
      for (IdemPurgeScheduler i : instances) {
        runs.add(pool.submit(() -> {
          barrier.await();
          return i.purgeIfElected();
        }));
      }
      for (Future<Long> f : runs) {
        removed.add(f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(removed).as("one instance purged (5 records), the others found the lease taken").containsExactlyInAnyOrder(5L, -1L, -1L);
    assertThat(keysLeft(ds)).containsExactly("k-5", "k-6", "k-7");
    assertThat(instances.get(0).purgeIfElected()).as("within the interval nobody purges again").isEqualTo(-1);
  }

  @Test
  void afterTheIntervalAnotherInstanceTakesItsTurn() throws Exception {
    SQLiteDataSource ds = dataSource();
    JdbcIdempotency keys = keysWithExpiredAndLive(ds);
    IdemPurgeScheduler first = instance(keys, ds, Duration.ofSeconds(2));
    IdemPurgeScheduler second = instance(keys, ds, Duration.ofSeconds(2));
    assertThat(first.purgeIfElected()).isEqualTo(5);
    assertThat(second.purgeIfElected()).isEqualTo(-1);
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE idem_keys SET expires_at = 0 WHERE idem_key = 'k-5'");
    }
    // the lock's record is kept for the rest of the interval (2 s) plus the key table's expiry margin
    long end = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    long removed;
    while ((removed = second.purgeIfElected()) < 0 && System.nanoTime() < end) {
      Thread.sleep(500);
    }
    assertThat(removed).isEqualTo(1);
    assertThat(keysLeft(ds)).containsExactly("k-6", "k-7");
  }

  private ApplicationContextRunner app() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BootLine.withIdem(BootLine.jdbc())))
        .withPropertyValues("spring.datasource.url=jdbc:sqlite:" + dir.resolve("app.db"), "idem.principal=shared");
  }

  @Test
  void theStartUpSaysWhatPurgesAndHowOften(CapturedOutput output) {
    app().run(ctx -> {
      assertThat(ctx).hasNotFailed().hasSingleBean(IdemPurgeScheduler.class);
      assertThat(output.getOut()).contains("Idem: expired keys are purged every PT1H (1000 a batch), by one instance at a time:"
          + " the key table idem_keys");
    });
  }

  @Test
  void withThePurgeOffTheStartUpSaysNothingPurges(CapturedOutput output) {
    app().withPropertyValues("idem.purge.enabled=false").run(ctx -> {
      assertThat(ctx).hasNotFailed().doesNotHaveBean(IdemPurgeScheduler.class);
      ctx.publishEvent(new org.springframework.boot.context.event.ApplicationReadyEvent(
          new org.springframework.boot.SpringApplication(), new String[0], ctx.getSourceApplicationContext(), Duration.ZERO));
      assertThat(output.getOut()).contains("Idem: nothing on this instance purges expired keys (idem.purge.enabled=false)");
    });
  }

  @Test
  void anIntervalUnderAMinuteStopsTheStartUpNamingTheProperty() {
    app().withPropertyValues("idem.purge.interval=10s").run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("must be at least one minute");
      assertThat(ctx.getStartupFailure()).hasStackTraceContaining("idem.purge.interval");
    });
  }
}
