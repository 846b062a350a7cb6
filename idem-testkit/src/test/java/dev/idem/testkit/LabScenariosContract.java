package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.lab.Lab;
import dev.idem.lab.LabReport;
import dev.idem.lab.ScenarioResult;
import java.sql.Connection;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * The lab's four scenarios ({@link Lab}, the same code {@code idem lab} runs) on every database the
 * transactional contracts run on: naive duplicates show, protected ones do not. Idem's own test, not
 * part of the published contracts (the testkit does not depend on the lab); each database's test
 * class runs it as one more {@code @Nested} class.
 */
abstract class LabScenariosContract extends TransactionalContract {

  @Test
  void theLabShowsNaiveDuplicatesAndProtectedSingleEffects() throws Exception {
    LabReport report = new Lab(database(), 8).run();
    assertThat(report.protectedOk()).as(report.toString()).isTrue();
    assertThat(find(report, "lost-response", Lab.NAIVE).effects()).isEqualTo(2);
    assertThat(find(report, "lost-response", Lab.PROTECTED).effects()).isEqualTo(1);
    assertThat(find(report, "concurrent", Lab.NAIVE).effects()).isEqualTo(8);
    assertThat(find(report, "concurrent", Lab.PROTECTED).effects()).isEqualTo(1);
    assertThat(find(report, "key-reuse", Lab.PROTECTED).rejected()).isEqualTo(1);
    assertThat(find(report, "distinct-keys", Lab.PROTECTED).effects()).isEqualTo(2);
    try (Connection c = database().open(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + Lab.EFFECTS_TABLE);
      st.execute("DROP TABLE IF EXISTS " + Lab.KEYS_TABLE);
    }
  }

  private static ScenarioResult find(LabReport report, String scenario, String variant) {
    return report.results().stream()
        .filter(r -> r.scenario().equals(scenario) && r.variant().equals(variant))
        .findFirst()
        .orElseThrow();
  }
}
