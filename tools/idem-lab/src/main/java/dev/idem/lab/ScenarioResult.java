package dev.idem.lab;

import java.util.List;
import java.util.Objects;

/**
 * One row of the lab table: what one scenario did under one variant, read back from the database.
 *
 * @param scenario the scenario name, for example {@code lost-response}
 * @param variant {@code naive} (no key table) or {@code protected} (Idem)
 * @param attempts how many attempts the callers made
 * @param effects how many effects the database holds for this row after all attempts (counted with
 *     SQL, not inferred from responses)
 * @param ids the id each attempt produced, in attempt order; an id whose response was lost after the
 *     commit is listed too, and counted in {@code lostResponses}
 * @param lostResponses how many responses the fault injection dropped after the commit
 * @param rejected how many attempts were refused because the key was reused with another payload
 * @param errors how many attempts failed for another reason (for example a lock timeout)
 * @param intendedEffects how many effects the callers intended
 * @param verdict a short human reading: {@code ok}, {@code duplicate effect}, or what went wrong
 * @param ok whether the row shows the behaviour Idem promises; for the naive variant, whether it
 *     avoided duplicates (it usually does not, and that is the point of the lab)
 */
public record ScenarioResult(
    String scenario,
    String variant,
    int attempts,
    long effects,
    List<Long> ids,
    int lostResponses,
    int rejected,
    int errors,
    long intendedEffects,
    String verdict,
    boolean ok) {

  /** @throws NullPointerException if a name, the ids or the verdict is {@code null} */
  public ScenarioResult {
    Objects.requireNonNull(scenario, "scenario");
    Objects.requireNonNull(variant, "variant");
    ids = List.copyOf(ids);
    Objects.requireNonNull(verdict, "verdict");
  }
}
