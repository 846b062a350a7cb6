package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The report's targets table: the engine judged against the hand-written key-last floor (not the
 * naive insert), key-last against the floor on PostgreSQL, and against Camel's repository when it ran.
 */
class ReportTargetsTest {

  private static Results.Measurement m(String db, String workload, int clients, double ops) {
    return new Results.Measurement(db, workload, clients, 1.0, (long) ops, 0, ops, 1, 2, 3, 1, 4, null);
  }

  private static Report report(Results r) {
    Options o = Options.parse("--db", "sqlite,postgres", "--clients", "1,4", "--no-jmh");
    return new Report(o, r, Map.of(), Instant.EPOCH, Duration.ZERO, 0, 0);
  }

  private static Report.Target find(List<Report.Target> targets, String prefix, String where) {
    return targets.stream().filter(t -> t.target().startsWith(prefix) && t.where().equals(where)).findFirst()
        .orElseThrow(() -> new AssertionError("no target " + prefix + " for " + where + " in " + targets));
  }

  @Test
  void theEngineIsJudgedAgainstTheHandWrittenFloorAndCamelAtEveryClientCount() {
    Results r = new Results();
    r.versions.put("sqlite", "SQLite");
    r.versions.put("postgres", "PostgreSQL");
    for (String db : List.of("sqlite", "postgres")) {
      for (int c : List.of(1, 4)) {
        m(r, db, Workloads.NAIVE, c, 10_000); // the engine is far below the naive insert: not a target any more
        m(r, db, Workloads.KEY_LAST, c, 1_000);
        m(r, db, Workloads.CAMEL, c, db.equals("postgres") && c == 4 ? 800 : 700);
      }
    }
    // sqlite: 0.95x the floor at 1 client, 0.85x at 4; postgres: 0.92x and 0.91x
    m(r, "sqlite", Workloads.IDEM_CREATE, 1, 950);
    m(r, "sqlite", Workloads.IDEM_CREATE, 4, 850);
    m(r, "postgres", Workloads.IDEM_CREATE, 1, 920);
    m(r, "postgres", Workloads.IDEM_CREATE, 4, 910);
    // postgres key-last: 0.96x at 1 client, 0.94x at 4
    m(r, "postgres", Workloads.IDEM_CREATE_KEY_LAST, 1, 960);
    m(r, "postgres", Workloads.IDEM_CREATE_KEY_LAST, 4, 940);

    List<Report.Target> t = report(r).targets();

    assertTrue(t.stream().noneMatch(x -> x.target().contains("naive")), t.toString());
    Report.Target sqliteFloor = find(t, "Idem transactional create (default strategy) >= 0.9x the hand-written floor", "sqlite");
    assertEquals("1 client: 0.95x, 4 clients: 0.85x", sqliteFloor.measured());
    assertEquals("missed (4 clients)", sqliteFloor.verdict());
    assertEquals("met", find(t, "Idem transactional create (default strategy)", "postgres").verdict()); // 0.92x, 0.91x

    Report.Target keyLast = find(t, "Idem transactional create, key-last >= 0.95x the hand-written floor", "postgres");
    assertEquals("1 client: 0.96x, 4 clients: 0.94x", keyLast.measured());
    assertEquals("missed (4 clients)", keyLast.verdict());
    assertFalse(t.stream().anyMatch(x -> x.target().contains("key-last >= 0.95x") && x.where().equals("sqlite")));

    // 950 / 700 = 1.36x, 850 / 700 = 1.21x
    Report.Target camel = find(t, "Idem transactional create >= 1.3x Camel's JDBC repository", "sqlite");
    assertEquals("1 client: 1.36x, 4 clients: 1.21x", camel.measured());
    assertEquals("missed (4 clients)", camel.verdict());
    // postgres: 920 / 700 = 1.31x at 1 client; 910 / 800 = 1.14x at 4
    Report.Target camelPostgres = find(t, "Idem transactional create >= 1.3x Camel", "postgres");
    assertEquals("1 client: 1.31x, 4 clients: 1.14x", camelPostgres.measured());
    assertEquals("missed (4 clients)", camelPostgres.verdict());
  }

  @Test
  void withoutCamelInTheResultsThereIsNoCamelTargetAndAMissingFloorIsNotMeasured() {
    Results r = new Results();
    r.versions.put("sqlite", "SQLite");
    m(r, "sqlite", Workloads.IDEM_CREATE, 1, 900);
    m(r, "sqlite", Workloads.IDEM_CREATE, 4, 900);

    List<Report.Target> t = report(r).targets();

    assertTrue(t.stream().noneMatch(x -> x.target().contains("Camel")), t.toString());
    assertEquals("not measured", find(t, "Idem transactional create (default strategy)", "sqlite").verdict());
  }

  @Test
  void aTargetMissedAtOneClientOnlySaysOneClientNotOneClients() {
    Results r = new Results();
    r.versions.put("sqlite", "SQLite");
    m(r, "sqlite", Workloads.KEY_LAST, 1, 1000);
    m(r, "sqlite", Workloads.KEY_LAST, 4, 1000);
    m(r, "sqlite", Workloads.IDEM_CREATE, 1, 500);
    m(r, "sqlite", Workloads.IDEM_CREATE, 4, 950);

    assertEquals("missed (1 client)", find(report(r).targets(), "Idem transactional create (default strategy)", "sqlite").verdict());
  }

  private static void m(Results r, String db, String workload, int clients, double ops) {
    r.measurements.add(m(db, workload, clients, ops));
  }
}
