package dev.idem.client;

import dev.idem.core.IdemException;
import java.time.Duration;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Every attempt of an operation failed in a way that may hide a success: a timeout, a dropped
 * connection, a lost response, or a retryable status until the attempts, the deadline or the retry
 * budget ran out. The effect may exist on the server. Resume with the same key ({@link #key()}):
 * {@code client.send(operation.withKey(e.key()))} then replays the first result if there was one.
 * Immutable and thread-safe.
 */
public class OutcomeUnknownException extends IdemException {
  private static final long serialVersionUID = 1L;

  private final String key;
  private final int attempts;
  private final int lastStatus;
  private final transient @Nullable Duration retryAfter;
  private final transient @Nullable ServerKeyStatus serverStatus;

  /**
   * @param key the idempotency key of the operation
   * @param attempts how many attempts were sent
   * @param lastStatus the status of the last response, or -1 when the last attempt got none
   * @param reason why the client stopped
   * @param cause the last failure, may be {@code null}
   */
  public OutcomeUnknownException(String key, int attempts, int lastStatus, String reason, @Nullable Throwable cause) {
    this(key, attempts, lastStatus, reason, cause, null);
  }

  /**
   * @param key the idempotency key of the operation
   * @param attempts how many attempts were sent
   * @param lastStatus the status of the last response, or -1 when the last attempt got none
   * @param reason why the client stopped
   * @param cause the last failure, may be {@code null}
   * @param retryAfter the wait the server asked for in its last answer ({@code Retry-After}), or
   *     {@code null} when it asked for none
   */
  public OutcomeUnknownException(String key, int attempts, int lastStatus, String reason, @Nullable Throwable cause, @Nullable Duration retryAfter) {
    this(key, attempts, lastStatus, reason, cause, retryAfter, null);
  }

  /**
   * @param key the idempotency key of the operation
   * @param attempts how many attempts were sent
   * @param lastStatus the status of the last response, or -1 when the last attempt got none
   * @param reason why the client stopped
   * @param cause the last failure, may be {@code null}
   * @param retryAfter the wait the server asked for in its last answer, or {@code null}
   * @param serverStatus what the server's key status endpoint said after the last attempt ({@link
   *     IdempotentHttpClient.Builder#keyStatus}), or {@code null} when it was not asked or did not answer
   */
  public OutcomeUnknownException(String key, int attempts, int lastStatus, String reason, @Nullable Throwable cause,
      @Nullable Duration retryAfter, @Nullable ServerKeyStatus serverStatus) {
    super("outcome unknown after " + attempts + " attempt(s) with idempotency key '" + key + "' (" + reason
        + (lastStatus > 0 ? ", last status " + lastStatus : "") + "); the effect may exist: resume with the same key", cause);
    this.key = key;
    this.attempts = attempts;
    this.lastStatus = lastStatus;
    this.retryAfter = retryAfter;
    this.serverStatus = serverStatus;
  }

  /**
   * @return what the server's key status endpoint said after the last attempt: for example {@link
   *     ServerKeyStatus.State#COMPLETED} with the stored status, so that the caller knows the effect
   *     exists and a resend with {@link #key()} will get its answer; empty when the client has no
   *     endpoint, did not ask, or got no answer
   */
  public Optional<ServerKeyStatus> serverStatus() {
    return Optional.ofNullable(serverStatus);
  }

  /**
   * @return the wait the server asked for in its last answer ({@code Retry-After}, RFC 9110 section
   *     10.2.3), for example to schedule {@link IdempotentHttpClient#resumePending()} no earlier;
   *     empty when it asked for none
   */
  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(retryAfter);
  }

  /** @return the idempotency key to resume with */
  public String key() {
    return key;
  }

  /** @return how many attempts were sent */
  public int attempts() {
    return attempts;
  }

  /** @return the last response status, or -1 when the last attempt got no response */
  public int lastStatus() {
    return lastStatus;
  }
}
