package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The percentile math the report rests on: HdrHistogram at 3 significant digits, merged per client. */
class LatencyStatsTest {

  @Test
  void percentilesOfTwoMergedClientsAreWithinATenthOfAPercentOfTheExactSample() {
    // two clients: the odd and the even latencies of 1..100,000 microseconds
    LatencyStats odd = new LatencyStats();
    LatencyStats even = new LatencyStats();
    for (int us = 1; us <= 100_000; us++) {
      (us % 2 == 0 ? even : odd).recordNanos(us * 1_000L);
    }
    LatencyStats all = new LatencyStats();
    all.add(odd);
    all.add(even);

    assertEquals(100_000, all.count());
    // exact sample values: p50 = 50,000 us, p99 = 99,000 us, p99.9 = 99,900 us
    assertWithinTenthOfPercentAbove(50.0, all.percentileMillis(50));
    assertWithinTenthOfPercentAbove(99.0, all.percentileMillis(99));
    assertWithinTenthOfPercentAbove(99.9, all.percentileMillis(99.9));
    assertWithinTenthOfPercentAbove(100.0, all.maxMillis());
    assertEquals(50.0005, all.meanMillis(), 0.05);
  }

  @Test
  void emptyStatsAndOutOfRangeValues() {
    LatencyStats empty = new LatencyStats();
    assertTrue(Double.isNaN(empty.percentileMillis(50)));
    assertTrue(Double.isNaN(empty.meanMillis()));

    LatencyStats clamped = new LatencyStats();
    clamped.recordNanos(0); // clamped to 1 ns
    clamped.recordNanos(Long.MAX_VALUE); // clamped to 10 minutes
    assertEquals(2, clamped.count());
    assertWithinTenthOfPercentAbove(600_000.0, clamped.maxMillis());
  }

  private static void assertWithinTenthOfPercentAbove(double exact, double actual) {
    assertTrue(actual >= exact && actual <= exact * 1.001, "expected " + exact + " (+0.1%), got " + actual);
  }
}
