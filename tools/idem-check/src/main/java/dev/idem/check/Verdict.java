package dev.idem.check;

/** The outcome of one check. */
public enum Verdict {
  /** The API did what the check expects. */
  PASS("pass"),
  /**
   * The API kept the promise that matters (it refused, nothing was duplicated) with another status
   * code than the draft's, for example 409 instead of 422 for a reused key. Does not fail the run;
   * the detail names the status seen.
   */
  DEVIATION("pass (deviation)"),
  /** A check that is not required did not pass; does not fail the run. */
  WARNING("warning"),
  /** A required check failed: the run fails (exit status 1). */
  FAIL("FAIL"),
  /** The check did not apply or could not run; the detail says why. Does not fail the run. */
  SKIPPED("skipped");

  private final String label;

  Verdict(String label) {
    this.label = label;
  }

  /** @return how the table shows it, for example {@code pass (deviation)} */
  public String label() {
    return label;
  }

  /** @return whether this verdict makes the run fail */
  public boolean failsRun() {
    return this == FAIL;
  }
}
