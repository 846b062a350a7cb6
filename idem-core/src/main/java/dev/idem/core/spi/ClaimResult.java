package dev.idem.core.spi;

import dev.idem.core.Fingerprint;
import dev.idem.core.StoredResponse;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link LeaseStore#claim} found and did. Exactly one of three states:
 *
 * <ul>
 *   <li>{@link State#CLAIMED}: the caller's owner token now holds the claim. {@link #recovery()}
 *       tells whether it took over a claim whose lease had expired (the previous owner's effect may
 *       have happened).
 *   <li>{@link State#IN_PROGRESS}: another owner holds a live lease; {@link #leaseRemaining()} says
 *       for how long at most.
 *   <li>{@link State#COMPLETED}: the operation finished; {@link #response()} is its stored response.
 * </ul>
 *
 * <p>{@link #fingerprint()} is the fingerprint recorded with the key, so that the engine can reject
 * a reuse with another payload. Immutable and thread-safe.
 */
public final class ClaimResult {

  /** The three states. */
  public enum State {
    /** The caller holds the claim. */
    CLAIMED,
    /** Another owner holds a live lease. */
    IN_PROGRESS,
    /** The operation finished and its response is stored. */
    COMPLETED
  }

  private final State state;
  private final Fingerprint fingerprint;
  private final boolean recovery;
  private final Duration leaseRemaining;
  private final @Nullable StoredResponse response;

  private ClaimResult(
      State state, Fingerprint fingerprint, boolean recovery, Duration leaseRemaining, @Nullable StoredResponse response) {
    this.state = state;
    this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
    this.recovery = recovery;
    this.leaseRemaining = leaseRemaining;
    this.response = response;
  }

  /**
   * @param fingerprint the fingerprint now recorded with the key
   * @param recovery {@code true} when an expired lease of another owner was taken over
   */
  public static ClaimResult claimed(Fingerprint fingerprint, boolean recovery) {
    return new ClaimResult(State.CLAIMED, fingerprint, recovery, Duration.ZERO, null);
  }

  /**
   * @param fingerprint the fingerprint recorded by the owner
   * @param leaseRemaining how long the owner's lease still runs, not negative
   */
  public static ClaimResult inProgress(Fingerprint fingerprint, Duration leaseRemaining) {
    Objects.requireNonNull(leaseRemaining, "leaseRemaining");
    return new ClaimResult(State.IN_PROGRESS, fingerprint, false, leaseRemaining.isNegative() ? Duration.ZERO : leaseRemaining, null);
  }

  /**
   * @param fingerprint the fingerprint recorded with the key
   * @param response the stored response, never {@code null}
   */
  public static ClaimResult completed(Fingerprint fingerprint, StoredResponse response) {
    return new ClaimResult(State.COMPLETED, fingerprint, false, Duration.ZERO, Objects.requireNonNull(response, "response"));
  }

  /** @return the state, never {@code null} */
  public State state() {
    return state;
  }

  /** @return the fingerprint recorded with the key, never {@code null} */
  public Fingerprint fingerprint() {
    return fingerprint;
  }

  /** @return for {@link State#CLAIMED}: whether an expired lease was taken over; otherwise {@code false} */
  public boolean recovery() {
    return recovery;
  }

  /** @return for {@link State#IN_PROGRESS}: the rest of the owner's lease; otherwise zero */
  public Duration leaseRemaining() {
    return leaseRemaining;
  }

  /** @return for {@link State#COMPLETED}: the stored response; otherwise {@code null} */
  public @Nullable StoredResponse response() {
    return response;
  }

  @Override
  public String toString() {
    return "ClaimResult[" + state + (recovery ? ", recovery" : "") + (state == State.IN_PROGRESS ? ", " + leaseRemaining : "") + "]";
  }
}
