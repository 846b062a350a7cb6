package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The report's targets against the hand-written floor (issue 41): each ratio taken to the right
 * workload of the same round, the verdict by the median, the CPU a create adds over the floor's,
 * and the statements' executor time per request read from {@code pg_stat_statements} counters.
 */
class HttpLoadFloorTargetsTest {

  private static HttpLoad.Run run(String db, String workload, int round, double ops, long appTicks) {
    return new HttpLoad.Run(db, workload, 4, round, 1, ops, new LatencyStats(), 0, (long) ops * 10, appTicks, -1, -1,
        (long) ops * 11);
  }

  private static String table(List<HttpLoad.Run> runs) {
    HttpLoad.Args a = new HttpLoad.Args();
    a.clients = List.of(4);
    Map<String, HttpLoad.Regime> regimes = new LinkedHashMap<>();
    regimes.put("sqlite-test", new HttpLoad.Regime("SQLite", "in app", List.of()));
    StringBuilder md = new StringBuilder();
    HttpLoad.floorTargets(md, runs, regimes, a);
    return md.toString();
  }

  private static String row(String md, String target) {
    return md.lines().filter(l -> l.startsWith("| " + target + " |")).findFirst()
        .orElseThrow(() -> new AssertionError("no row " + target + " in\n" + md));
  }

  @Test
  void eachRatioIsTakenToItsBaselineInTheSameRoundAndJudgedByTheMedian() {
    List<HttpLoad.Run> runs = new ArrayList<>();
    // three rounds: the transactional create at 0.90x, 1.00x and 0.97x of the floor's create of its round
    double[] floor = {1000, 800, 1200};
    double[] tx = {900, 800, 1164};
    double[] lease = {810, 640, 1100};
    for (int round = 1; round <= 3; round++) {
      runs.add(run("sqlite-test", "create, " + HttpLoad.FLOOR, round, floor[round - 1], 1000));
      runs.add(run("sqlite-test", "create, " + HttpLoad.TX, round, tx[round - 1], 1500));
      runs.add(run("sqlite-test", "create, " + HttpLoad.LEASE, round, lease[round - 1], 1500));
      runs.add(run("sqlite-test", "replay, " + HttpLoad.FLOOR, round, 3000, 100));
      runs.add(run("sqlite-test", "replay, " + HttpLoad.TX, round, round == 2 ? 2900 : 3100, 100));
    }
    String md = table(runs);

    String create = row(md, "transactional create >= 0.95x the floor's create");
    assertTrue(create.contains("| 0.97x (0.90x-1.00x) | **met** |"), create);
    // app CPU per request: 1500 ticks over 9000..11640 requests against the floor's 1000 over 8000..12000: positive
    assertTrue(create.contains("/ in app"), create);
    assertTrue(create.matches(".*\\| \\+\\d+ \\(.*"), create);

    // lease / transactional: 0.90x, 0.80x, 0.945x (shown 0.95x): median 0.90x, met at exactly the target
    String leaseRow = row(md, "lease create >= 0.9x the transactional create");
    assertTrue(leaseRow.contains("| 0.90x (0.80x-0.95x) | **met** |"), leaseRow);

    // the replay: 1.03x, 0.97x, 1.03x: median 1.03x
    assertTrue(row(md, "transactional replay >= the floor's replay").contains("**met**"), md);

    // no lease replay was run: no row for it rather than a made-up figure
    assertTrue(md.lines().noneMatch(l -> l.startsWith("| lease replay")), md);
  }

  @Test
  void aCreateBelowTheTargetIsMissed() {
    List<HttpLoad.Run> runs = new ArrayList<>();
    runs.add(run("sqlite-test", "create, " + HttpLoad.FLOOR, 1, 1000, 100));
    runs.add(run("sqlite-test", "create, " + HttpLoad.TX, 1, 940, 100));
    assertTrue(row(table(runs), "transactional create >= 0.95x the floor's create").contains("| 0.94x (0.94x-0.94x) | missed |"));
  }

  @Test
  void statementsAreTheCountersThatGrewBetweenTwoSnapshots() {
    Map<Long, PgStatements.Stat> before = Map.of(1L, new PgStatements.Stat("SELECT 1", 10, 5.0),
        2L, new PgStatements.Stat("COMMIT", 4, 2.0));
    Map<Long, PgStatements.Stat> after = Map.of(1L, new PgStatements.Stat("SELECT 1", 30, 9.0),
        2L, new PgStatements.Stat("COMMIT", 4, 2.0), 3L, new PgStatements.Stat("INSERT INTO k VALUES ($1)", 20, 4.0));
    Map<Long, PgStatements.Stat> ran = PgStatements.between(before, after);
    assertEquals(Map.of(1L, new PgStatements.Stat("SELECT 1", 20, 4.0), 3L, new PgStatements.Stat("INSERT INTO k VALUES ($1)", 20, 4.0)),
        ran);

    PgStatements.Cell cell = new PgStatements.Cell(0, Map.of()).plus(20, ran).plus(20, ran);
    assertEquals(40, cell.requests());
    // both statements once a request; the costliest first (equal here: both kept)
    assertEquals(2, cell.perRequest(0.05).size());
    assertEquals(40, cell.perRequest(0.05).get(0).calls());
    assertEquals(0, new PgStatements.Cell(1000, ran).perRequest(0.05).size(), "0.02 calls a request are left out");
  }

  @Test
  void theDatabaseOfAUrlAndAStatementOnOneTableLine() {
    assertEquals("idem_httpload_1234_floor", PgStatements.databaseOf("jdbc:postgresql://127.0.0.1:5432/idem_httpload_1234_floor?user=postgres"));
    assertEquals("notes", PgStatements.databaseOf("jdbc:postgresql://h/notes"));
    assertEquals("SELECT a \\|\\| b FROM t WHERE x = $1", HttpLoad.statementText("SELECT a || b\n  FROM t\tWHERE x = $1"));
    assertEquals(140, HttpLoad.statementText("x".repeat(300)).length());
  }
}
