package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ProcCpuTest {

  @Test
  void fieldsAreCountedFromTheLastParenthesisSoANameWithSpacesAndParenthesesParses() {
    String line = "4242 (postgres: a (b) c) S 2203 4242 4242 0 -1 4194560 500 0 0 0 1234 567 89 10 20 0 1 0 4000 1000 200";

    ProcCpu.Stat s = ProcCpu.parse(4242, line);

    assertEquals(new ProcCpu.Stat(4242, "postgres: a (b) c", 2203, 1234, 567, 89, 10), s);
  }

  @Test
  void aMalformedLineIsNull() {
    assertNull(ProcCpu.parse(1, "1 (x) S 0"));
    assertNull(ProcCpu.parse(1, "no parentheses"));
  }

  @Test
  void theTickRateIsPositive() {
    assertTrue(ProcCpu.TICKS_PER_SECOND > 0);
  }
}
