package dev.idem.jdbc;

import dev.idem.core.Effect;
import dev.idem.core.EffectContext;
import dev.idem.core.StoredResponse;
import org.jspecify.annotations.Nullable;

/**
 * The attempt's effect, run by the key table's engine, and how far the attempt got: the effect
 * started, it answered, the transaction's work returned. One per round; used by the round's
 * thread only.
 */
final class AttemptProgress implements Effect {
  private final Effect effect;
  boolean started;
  boolean answered;
  boolean returned;
  /**
   * The effect called {@link EffectContext#ensureClaimed()} and the key was this attempt's (under
   * key-last it claimed the key then; under claim-first it was already): its answer began to
   * reach the client, so the attempt is never run again.
   */
  boolean claimed;
  @Nullable StoredResponse response;
  /**
   * How the runner's work ended, once it returned: key-last's {@link KeyLast#inRunnersTransaction},
   * or claim-first's {@link JdbcIdempotency}{@code .execute} in the runner's transaction.
   */
  @Nullable RoundEnd end;

  AttemptProgress(Effect effect) {
    this.effect = effect;
  }

  /** Runs the attempt's effect with the context the key table's engine made, unchanged. */
  @Override
  public StoredResponse run(EffectContext context) throws Exception {
    started = true;
    StoredResponse answer = effect.run(context);
    if (answer == null) {
      // A programming error, not an answer: it fails as the effect's own failure would (the
      // engine's IllegalStateException reaches the caller), never as a store failure.
      return answer;
    }
    answered = true;
    response = answer;
    return answer;
  }

  /** What the context's {@code ensureClaimed} runs once the key is this attempt's. */
  void claimed() {
    claimed = true;
  }
}
