package dev.idem.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class OutboxLoadTest {

  private static final String SECTION = OutboxLoad.BEGIN + "\n## Outbox\n\nnumbers\n" + OutboxLoad.END + "\n";

  @Test
  void theSectionGoesBeforeTheWorkloadDescriptionsTheFirstTime() {
    String text = "# Benchmarks\n\n## HTTP\n\nx\n\n## What each workload does\n\ny\n";
    assertEquals("# Benchmarks\n\n## HTTP\n\nx\n\n" + SECTION + "\n## What each workload does\n\ny\n",
        OutboxLoad.withSection(text, SECTION));
  }

  @Test
  void aNewRunReplacesItsSectionAndNothingElse() {
    String text = OutboxLoad.withSection("# B\n\n## What each workload does\n\ny\n", SECTION);
    String newer = OutboxLoad.BEGIN + "\n## Outbox\n\nnew numbers\n" + OutboxLoad.END + "\n";
    assertEquals("# B\n\n" + newer + "\n## What each workload does\n\ny\n", OutboxLoad.withSection(text, newer));
  }

  @Test
  void aRegeneratedReportKeepsTheSectionOfTheOldFile() {
    String old = OutboxLoad.withSection("# old\n\n## What each workload does\n\ny\n", SECTION);
    assertEquals(SECTION, OutboxLoad.sectionOf(old));
    String regenerated = OutboxLoad.withSection("# new\n\n## What each workload does\n\nz\n", OutboxLoad.sectionOf(old));
    assertTrue(regenerated.contains(SECTION) && regenerated.startsWith("# new") && regenerated.endsWith("z\n"), regenerated);
    assertNull(OutboxLoad.sectionOf("# no section\n"));
  }

  @Test
  void loadHarnessKeepsEverySectionOtherCommandsWroteInTheirOrder() {
    String outbox = "<!-- OutboxLoad: begin -->\n## Outbox\nx\n<!-- OutboxLoad: end -->\n";
    String cluster = "<!-- RedisCluster: begin -->\n## Cluster\ny\n<!-- RedisCluster: end -->\n";
    String previous = "# old\n\n" + outbox + "\n" + cluster + "\n## What each workload does\n\nold\n";
    String regenerated = Report.withKeptSections("# new\n\n## What each workload does\n\nnew\n", previous);
    assertEquals("# new\n\n" + outbox + "\n" + cluster + "\n## What each workload does\n\nnew\n", regenerated);
    assertEquals("# new\n", Report.withKeptSections("# new\n", "# nothing kept\n"));
  }
}
