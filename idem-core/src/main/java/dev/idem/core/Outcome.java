package dev.idem.core;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The result of running an operation under an idempotency key: the response and whether it was
 * produced now ({@link Kind#EXECUTED}) or read back from the store ({@link Kind#REPLAYED}).
 *
 * <p>Never carries a {@code null} response. Immutable and thread-safe.
 */
public final class Outcome {

  /** How the response was obtained. */
  public enum Kind {
    /** The operation ran in this call; its effect and its response were stored together. */
    EXECUTED,
    /** An earlier attempt ran the operation; this call replayed its stored response. */
    REPLAYED
  }

  private final Kind kind;
  private final StoredResponse response;
  private final boolean stored;
  private final boolean recovery;

  private Outcome(Kind kind, StoredResponse response, boolean stored, boolean recovery) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.response = Objects.requireNonNull(response, "response");
    this.stored = stored;
    this.recovery = recovery;
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

  /**
   * @return {@code true} when the response is stored with the key (always, for a replay);
   *     {@code false} when the response policy released the claim
   */
  public boolean stored() {
    return stored;
  }

  /** @return {@code true} when this execution took over an expired lease of another owner */
  public boolean recovery() {
    return recovery;
  }

  /** @return how the response was obtained, never {@code null} */
  public Kind kind() {
    return kind;
  }

  /** @return {@code true} when the response was replayed from the store */
  public boolean replayed() {
    return kind == Kind.REPLAYED;
  }

  /** @return the response, never {@code null} */
  public StoredResponse response() {
    return response;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof Outcome
        && ((Outcome) o).kind == kind
        && ((Outcome) o).stored == stored
        && ((Outcome) o).recovery == recovery
        && ((Outcome) o).response.equals(response);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, response, stored, recovery);
  }

  @Override
  public String toString() {
    return "Outcome[" + kind + (stored ? "" : ", not stored") + (recovery ? ", recovery" : "") + ", " + response + "]";
  }
}
