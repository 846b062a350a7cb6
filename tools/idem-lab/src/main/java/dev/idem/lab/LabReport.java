package dev.idem.lab;

import java.util.List;

/**
 * The results of one lab run.
 *
 * @param database the product and version of the database, for example {@code "SQLite 3.51.1"}
 * @param url the JDBC URL the lab ran on
 * @param results one row per scenario and variant, in run order
 */
public record LabReport(String database, String url, List<ScenarioResult> results) {

  /** Copies {@code results}. */
  public LabReport {
    results = List.copyOf(results);
  }

  /**
   * @return {@code true} when every row of the {@code protected} variant kept its promise: no
   *     duplicate effect, no wrong id, no error. The CLI exits non-zero otherwise.
   */
  public boolean protectedOk() {
    return results.stream().filter(r -> r.variant().equals(Lab.PROTECTED)).allMatch(ScenarioResult::ok);
  }
}
