package dev.idem.core;

import java.util.Objects;

/**
 * The answer an attempt gives when there is one to give: the response and whether it was produced
 * now ({@link Kind#EXECUTED}) or read back from the store ({@link Kind#REPLAYED}). It is what
 * {@link AttemptResult#outcome()} holds and what {@link IdempotencyEngine#execute} returns.
 *
 * <p>A value: two outcomes are equal when all four components are. Immutable and thread-safe.
 *
 * @param kind how the response was obtained, never {@code null}
 * @param response the response, never {@code null}
 * @param stored {@code true} when the response is stored with the key (always, for a replay);
 *     {@code false} when the {@link ResponsePolicy} released the claim, so a retry runs the
 *     operation again
 * @param recovery {@code true} when this execution took over an expired lease of another owner
 *     (lease mode), so that an earlier owner's effect may already have happened; never for a replay
 */
public record Outcome(Kind kind, StoredResponse response, boolean stored, boolean recovery) {

  /** How the response was obtained. */
  public enum Kind {
    /** The operation ran in this call; its effect and its response were stored together. */
    EXECUTED,
    /** An earlier attempt ran the operation; this call replayed its stored response. */
    REPLAYED
  }

  /**
   * @throws NullPointerException if {@code kind} or {@code response} is {@code null}
   * @throws IllegalArgumentException for a replay that is not stored or is a recovery
   */
  public Outcome {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(response, "response");
    if (kind == Kind.REPLAYED && (!stored || recovery)) {
      throw new IllegalArgumentException("a replayed outcome is stored and is no recovery");
    }
  }

  /**
   * The operation ran now and its response was stored.
   *
   * @throws NullPointerException if {@code response} is {@code null}
   */
  public static Outcome executed(StoredResponse response) {
    return new Outcome(Kind.EXECUTED, response, true, false);
  }

  /**
   * The operation ran now.
   *
   * @param response the response, never {@code null}
   * @param stored whether the response was stored; {@code false} when the {@link ResponsePolicy}
   *     released the claim, so a retry runs the operation again
   * @param recovery whether this run took over an expired lease (lease mode), so that an earlier
   *     owner's effect may already have happened
   * @throws NullPointerException if {@code response} is {@code null}
   */
  public static Outcome executed(StoredResponse response, boolean stored, boolean recovery) {
    return new Outcome(Kind.EXECUTED, response, stored, recovery);
  }

  /** @throws NullPointerException if {@code response} is {@code null} */
  public static Outcome replayed(StoredResponse response) {
    return new Outcome(Kind.REPLAYED, response, true, false);
  }

  /** @return {@code true} when the response was replayed from the store */
  public boolean replayed() {
    return kind == Kind.REPLAYED;
  }

  @Override
  public String toString() {
    return "Outcome[" + kind + (stored ? "" : ", not stored") + (recovery ? ", recovery" : "") + ", " + response + "]";
  }
}
