package dev.idem.campaign;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The short campaign of every build: SQLite and a private PostgreSQL, transactional and lease
 * mode, and a private Redis in lease mode, a few hundred operations each (from two users, some with
 * the same keys and bodies) while the service is killed and restarted, PostgreSQL and Redis are
 * killed and restarted, and connections are cut before and after COMMIT; then a few hundred fuzzed
 * requests. Every invariant of {@link
 * Report#violations} must hold, and every fault kind must actually have happened. Without the
 * notes service jar or the PostgreSQL server programs the test is skipped with a "[campaign]
 * SKIPPED" line, except under {@code CI=true}, where it fails.
 */
class ShortCampaignTest {

  /** Operations per store and mode (half of them in cross-scope pairs). */
  private static final int OPERATIONS = 100;
  /**
   * Faults of each kind per store and mode. Each service kill costs a restart of the service (5 to
   * 30 seconds, by the machine's load), which is most of the short run's time.
   */
  private static final int FAULTS = 1;
  /** Fuzzed requests per store and mode: every fuzz kind 10 times. */
  private static final int FUZZ = 140;

  @TempDir Path dir;

  private static boolean ci() {
    return "true".equalsIgnoreCase(System.getenv("CI"));
  }

  private static void missing(String why) {
    if (ci()) {
      throw new IllegalStateException(why + "; under CI=true the campaign must run");
    }
    System.err.println("[campaign] SKIPPED: " + why);
    Assumptions.abort(why);
  }

  @Test
  @Timeout(value = 12, unit = TimeUnit.MINUTES)
  void transactionalAndLeaseModeSurviveKilledProcessesAKilledDatabaseAndCutCommits() throws Exception {
    Path jar = Path.of(System.getProperty("idem.campaign.notes-jar", "../../examples/notes-service/target/notes-service.jar"));
    if (!Files.isRegularFile(jar)) {
      missing("the notes service jar is missing: " + jar);
    }
    List<String> stores = new ArrayList<>(List.of("sqlite"));
    String pg = PostgresInstance.unavailableReason();
    if (pg == null) {
      stores.add("postgresql");
    } else if (ci()) {
      missing(pg);
    } else {
      System.err.println("[campaign] SKIPPED the PostgreSQL part: " + pg);
    }
    String redis = RedisInstance.unavailableReason();
    if (redis == null) {
      stores.add("redis");
    } else if (ci()) {
      missing(redis);
    } else {
      System.err.println("[campaign] SKIPPED the Redis part: " + redis);
    }
    Campaign.Config config = new Campaign.Config(jar.toAbsolutePath(), dir, stores, List.of("transactional", "lease"),
        OPERATIONS, FAULTS, FUZZ, 4, Duration.ofSeconds(5), 20260601L, System.out);

    List<RunResult> results = new Campaign(config).run();

    System.out.println(Report.markdown(results, stores, List.of("transactional", "lease"), "(short run of ShortCampaignTest)", 20260601L, 4,
        Duration.ofSeconds(5), Duration.ZERO));
    assertThat(results).hasSize(Report.runs(stores, List.of("transactional", "lease")).size());
    assertThat(Report.violations(results)).as("invariants").isEmpty();
    for (RunResult r : results) {
      assertThat(r.answered2xx()).as(r.store() + "/" + r.mode() + ": every operation answered 2xx").isEqualTo(r.operations());
      assertThat(r.faults("service-kill")).as(r.store() + "/" + r.mode() + ": service kills").isEqualTo(FAULTS);
      if (r.store().equals("postgresql")) {
        assertThat(r.faults("database-kill")).as(r.mode() + ": database kills").isEqualTo(FAULTS);
        if (r.mode().equals("transactional")) { // lease mode auto-commits each statement: no COMMIT to cut
          assertThat(r.faults("cut-before-commit")).as(r.mode() + ": cuts before COMMIT").isPositive();
          assertThat(r.faults("cut-after-commit")).as(r.mode() + ": cuts after COMMIT").isPositive();
        }
      }
      if (r.store().equals("redis")) {
        assertThat(r.faults("redis-kill")).as("Redis kills").isEqualTo(FAULTS);
      }
      assertThat(r.crossScopeReplays()).as(r.store() + "/" + r.mode() + ": cross-scope replays").isZero();
      assertThat(r.fuzzRequests()).as(r.store() + "/" + r.mode() + ": fuzzed requests").isEqualTo(FUZZ);
      assertThat(r.fuzzFiveXx()).as(r.store() + "/" + r.mode() + ": 5xx answers to fuzzed requests").isEmpty();
    }
  }
}
