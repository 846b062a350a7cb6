package dev.idem.core;

import java.util.Objects;

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

  private Outcome(Kind kind, StoredResponse response) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.response = Objects.requireNonNull(response, "response");
  }

  /** @throws NullPointerException if {@code response} is {@code null} */
  public static Outcome executed(StoredResponse response) {
    return new Outcome(Kind.EXECUTED, response);
  }

  /** @throws NullPointerException if {@code response} is {@code null} */
  public static Outcome replayed(StoredResponse response) {
    return new Outcome(Kind.REPLAYED, response);
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
  public boolean equals(Object o) {
    return o instanceof Outcome
        && ((Outcome) o).kind == kind
        && ((Outcome) o).response.equals(response);
  }

  @Override
  public int hashCode() {
    return kind.hashCode() * 31 + response.hashCode();
  }

  @Override
  public String toString() {
    return "Outcome[" + kind + ", " + response + "]";
  }
}
