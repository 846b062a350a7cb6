package dev.idem.core;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The outcome is unknown: the effect ran, and whether its result was kept with its stored response
 * is not known. This is the one name Idem gives that case in both modes ({@link
 * AttemptResult.Kind#OUTCOME_UNKNOWN}, the problem type {@code outcome-unknown}); {@link #phase()}
 * says which write was left in doubt:
 *
 * <ul>
 *   <li>{@link Phase#COMPLETION}, lease mode: the effect ran outside the store, so it happened;
 *       every completion of the claim ({@link dev.idem.core.spi.LeaseStore#complete}, retried with
 *       the same owner token within the lease) failed with a store error, so whether the response
 *       is stored is unknown: the last write may have happened and only its acknowledgement been
 *       lost.
 *   <li>{@link Phase#COMMIT}, transactional mode: the effect's writes and the stored response were
 *       sent for commit in one transaction and the commit's acknowledgement was lost, so both were
 *       kept or neither was.
 *   <li>{@link Phase#PARTIAL}: an operation of steps stopped after recording some of them.
 *   <li>{@link Phase#CLIENT_RETRIES_EXHAUSTED}, on the calling side: Idem's HTTP client ({@code
 *       dev.idem.client.IdempotentHttpClient}) sent the operation and every attempt failed in a way
 *       that may hide a success (a timeout, a dropped connection, a retryable status) until its
 *       attempts, its deadline or its retry budget ran out. {@link #attempts()}, {@link
 *       #lastStatus()}, {@link #serverRetryAfter()} and {@link #serverStatus(Class)} say what the
 *       client saw. Resume with the same key: {@code client.send(operation.withKey(e.key()))}
 *       replays the first result if there was one.
 * </ul>
 *
 * <p>The response the effect returned must not be sent as the answer: a later retry could
 * contradict it. What a retry with the same scope and key gets instead:
 *
 * <ul>
 *   <li>if the response was stored after all: the stored response, replayed;
 *   <li>{@link Phase#COMPLETION}, before the lease ends: {@link RequestInProgressException} (or a
 *       wait), since the claim is still held; once the lease has ended: the claim, taken over with
 *       {@link LeaseContext#recovery()} {@code true}; the effect runs again and must reconcile with
 *       what the first run did (look its result up by the idempotency key, pass the key
 *       downstream);
 *   <li>{@link Phase#COMMIT}, if the transaction did not commit: the request runs, once.
 *   <li>{@link Phase#PARTIAL}: the operation, resumed after its last recorded step.
 * </ul>
 *
 * <p>So a retry with the same key is safe; a retry with a new key is not. An HTTP integration maps
 * the server-side phases to 503 Service Unavailable with {@code Retry-After} of {@link
 * #retryAfter()} (RFC 9110 sections 15.6.4 and 10.2.3), saying that the outcome is unknown.
 *
 * <p><b>Why it extends {@link IdemStoreException}, and the client's phase.</b> Idem's integrations
 * (the servlet filter, the Spring Boot starter, the consumers) choose their answer by these types:
 * an {@code OutcomeUnknownException} is answered as an unknown outcome, any other {@link
 * IdemStoreException} as the store's failure. The server-side phases keep that parent so that
 * every such mapping stays as it was. An exception of phase {@link Phase#CLIENT_RETRIES_EXHAUSTED}
 * is not Idem's answer to the request being served: when application code (a handler, an effect,
 * a step, a message handler) lets one escape while it calls another service, the integrations
 * treat it as the application's own failure, exactly as the client's exception was treated when it
 * was a separate type; {@link #thrownByClient(Throwable)} is the test they use. A caller of the
 * client that catches {@link IdemException} still catches it.
 *
 * <p>Immutable and thread-safe; the details the client attaches ({@link #serverStatus(Class)}) are
 * immutable records and are not serialized.
 */
public class OutcomeUnknownException extends IdemStoreException {
  private static final long serialVersionUID = 1L;

  /** Which write's outcome is unknown. */
  public enum Phase {
    /** Lease mode: the effect happened; the completion of its claim (its stored response) is in doubt. */
    COMPLETION,
    /** Transactional mode: the commit of the effect's writes together with the stored response is in doubt. */
    COMMIT,
    /**
     * An operation of several steps ({@link dev.idem.core.steps.Steps}) stopped after recording some
     * of them: what they did is recorded as recovery points, the rest has not run, and no final
     * response is stored. The claim stays, so a retry with the same key resumes the operation after
     * its last recorded step (and a completer can finish it); it is never run from the start again.
     */
    PARTIAL,
    /**
     * The calling side: Idem's HTTP client sent the operation with its idempotency key and every
     * attempt failed in a way that may hide a success (a timeout, a dropped connection, a lost
     * response, a retryable status), until its attempts, its deadline or its retry budget ran out.
     * The effect may exist on the server. Created only with {@link #clientRetriesExhausted}.
     */
    CLIENT_RETRIES_EXHAUSTED
  }

  private final transient IdempotencyKey key;
  private final Duration retryAfter;
  private final Phase phase;
  private final int attempts;
  private final int lastStatus;
  private final transient @Nullable Duration serverRetryAfter;
  private final transient @Nullable Object serverStatus;

  /**
   * The lease-mode case, {@link Phase#COMPLETION}.
   *
   * @param key the key whose completion failed, never {@code null}
   * @param retryAfter when a retry can expect a final answer (the rest of the lease, at least one
   *     second), never {@code null} or negative
   * @param cause the store's last failure, may be {@code null}
   */
  public OutcomeUnknownException(IdempotencyKey key, Duration retryAfter, @Nullable Throwable cause) {
    this(key, retryAfter, Phase.COMPLETION, cause);
  }

  /**
   * @param key the key whose outcome is unknown, never {@code null}
   * @param retryAfter when a retry can expect a final answer, at least one second, never {@code null}
   * @param phase which write is in doubt, never {@code null}
   * @param cause the store's last failure, may be {@code null}
   * @throws IllegalArgumentException if {@code retryAfter} is negative, or if {@code phase} is
   *     {@link Phase#CLIENT_RETRIES_EXHAUSTED} (use {@link #clientRetriesExhausted})
   */
  public OutcomeUnknownException(IdempotencyKey key, Duration retryAfter, Phase phase, @Nullable Throwable cause) {
    super(message(key, retryAfter, phase), cause);
    if (retryAfter.isNegative()) {
      throw new IllegalArgumentException("retryAfter must not be negative: " + retryAfter);
    }
    if (phase == Phase.CLIENT_RETRIES_EXHAUSTED) {
      throw new IllegalArgumentException("a client's exhausted retries are created with clientRetriesExhausted");
    }
    this.key = key;
    this.retryAfter = retryAfter;
    this.phase = phase;
    this.attempts = 0;
    this.lastStatus = -1;
    this.serverRetryAfter = null;
    this.serverStatus = null;
  }

  private OutcomeUnknownException(IdempotencyKey key, int attempts, int lastStatus, String reason, @Nullable Throwable cause,
      @Nullable Duration serverRetryAfter, @Nullable Object serverStatus) {
    super("outcome unknown after " + attempts + " attempt(s) with idempotency key '" + Objects.requireNonNull(key, "key") + "' ("
        + Objects.requireNonNull(reason, "reason") + (lastStatus > 0 ? ", last status " + lastStatus : "")
        + "); the effect may exist: resume with the same key", cause);
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must not be negative: " + attempts);
    }
    if (serverRetryAfter != null && serverRetryAfter.isNegative()) {
      throw new IllegalArgumentException("serverRetryAfter must not be negative: " + serverRetryAfter);
    }
    this.key = key;
    this.retryAfter = serverRetryAfter == null ? Duration.ZERO : serverRetryAfter;
    this.phase = Phase.CLIENT_RETRIES_EXHAUSTED;
    this.attempts = attempts;
    this.lastStatus = lastStatus;
    this.serverRetryAfter = serverRetryAfter;
    this.serverStatus = serverStatus;
  }

  /**
   * The calling side's case, {@link Phase#CLIENT_RETRIES_EXHAUSTED}: what Idem's HTTP client throws
   * when its attempts, its deadline or its retry budget ran out on failures that may hide a success.
   *
   * @param key the operation's idempotency key, to resume with, never {@code null}
   * @param attempts how many attempts were sent, 0 or more
   * @param lastStatus the HTTP status of the last response, or -1 when the last attempt got none
   * @param reason why the client stopped, for the message, never {@code null}
   * @param cause the last failure, may be {@code null}
   * @param serverRetryAfter the wait the server asked for in its last answer ({@code Retry-After}),
   *     or {@code null} when it asked for none; never negative
   * @param serverStatus what the server's key status endpoint said after the last attempt (the
   *     client's {@code dev.idem.client.ServerKeyStatus}), or {@code null} when it was not asked or
   *     did not answer
   * @return the exception, not thrown
   * @throws NullPointerException if {@code key} or {@code reason} is {@code null}
   * @throws IllegalArgumentException if {@code attempts} or {@code serverRetryAfter} is negative
   */
  public static OutcomeUnknownException clientRetriesExhausted(IdempotencyKey key, int attempts, int lastStatus, String reason,
      @Nullable Throwable cause, @Nullable Duration serverRetryAfter, @Nullable Object serverStatus) {
    return new OutcomeUnknownException(key, attempts, lastStatus, reason, cause, serverRetryAfter, serverStatus);
  }

  /**
   * Whether {@code failure} is the calling side's unknown outcome ({@link
   * Phase#CLIENT_RETRIES_EXHAUSTED}): thrown by an HTTP client that application code called, not an
   * answer of Idem to the request or message being handled. Integrations that map {@link
   * IdemStoreException} and {@code OutcomeUnknownException} to answers treat such a failure as the
   * application's own.
   *
   * @param failure any throwable, may be {@code null}
   * @return {@code true} if it is an {@code OutcomeUnknownException} of phase {@link
   *     Phase#CLIENT_RETRIES_EXHAUSTED}; {@code false} otherwise, also for {@code null}
   */
  public static boolean thrownByClient(@Nullable Throwable failure) {
    return failure instanceof OutcomeUnknownException unknown && unknown.phase == Phase.CLIENT_RETRIES_EXHAUSTED;
  }

  private static String message(IdempotencyKey key, Duration retryAfter, Phase phase) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(phase, "phase");
    long seconds = Objects.requireNonNull(retryAfter, "retryAfter").toSeconds();
    if (phase == Phase.PARTIAL) {
      return "the operation for idempotency key '" + key + "' ran in part and stopped: the steps it recorded stay recorded;"
          + " retry with the same key after " + seconds + " s (a retry resumes it after its last recorded step, or replays its"
          + " final response)";
    }
    return phase == Phase.COMPLETION
        ? "the effect for idempotency key '" + key + "' ran, but its response could not be stored, so the outcome is unknown;"
            + " retry with the same key after " + seconds + " s (a retry replays the stored response, or takes the claim over as a recovery)"
        : "the transaction for idempotency key '" + key + "' was sent for commit and its acknowledgement was lost, so the outcome"
            + " is unknown: its writes and stored response committed together or not at all; retry with the same key after " + seconds
            + " s (a retry replays the stored response, or runs the request once)";
  }

  /** @return the key whose outcome is unknown, never {@code null} */
  public IdempotencyKey key() {
    return key;
  }

  /**
   * @return the suggested wait before a retry with the same key, never {@code null}: for the
   *     server-side phases at least one second; for {@link Phase#CLIENT_RETRIES_EXHAUSTED} the wait
   *     the server asked for in its last answer, or {@link Duration#ZERO} when it asked for none
   *     ({@link #serverRetryAfter()} tells the two apart)
   */
  public Duration retryAfter() {
    return retryAfter;
  }

  /** @return which write's outcome is unknown, or that a client gave up; never {@code null} */
  public Phase phase() {
    return phase;
  }

  /**
   * @return for {@link Phase#CLIENT_RETRIES_EXHAUSTED}: how many attempts the client sent (0 or
   *     more); 0 for the server-side phases
   */
  public int attempts() {
    return attempts;
  }

  /**
   * @return for {@link Phase#CLIENT_RETRIES_EXHAUSTED}: the HTTP status of the last response, or -1
   *     when the last attempt got no response; -1 for the server-side phases
   */
  public int lastStatus() {
    return lastStatus;
  }

  /**
   * @return for {@link Phase#CLIENT_RETRIES_EXHAUSTED}: the wait the server asked for in its last
   *     answer ({@code Retry-After}, RFC 9110 section 10.2.3), for example to schedule a resume no
   *     earlier; empty when it asked for none, and for the server-side phases
   */
  public Optional<Duration> serverRetryAfter() {
    return Optional.ofNullable(serverRetryAfter);
  }

  /**
   * What the server's key status endpoint said after the client's last attempt, for {@link
   * Phase#CLIENT_RETRIES_EXHAUSTED}: the HTTP client attaches its {@code
   * dev.idem.client.ServerKeyStatus}, so {@code e.serverStatus(ServerKeyStatus.class)}; for example
   * {@code COMPLETED} with the stored status tells that the effect exists and a resend with {@link
   * #key()} gets its answer.
   *
   * @param type the type the client attached, never {@code null}
   * @param <T> that type
   * @return the status; empty when the client has no endpoint, did not ask, got no answer, when it
   *     is not of {@code type}, and for the server-side phases
   */
  public <T> Optional<T> serverStatus(Class<T> type) {
    Objects.requireNonNull(type, "type");
    return type.isInstance(serverStatus) ? Optional.of(type.cast(serverStatus)) : Optional.empty();
  }
}
