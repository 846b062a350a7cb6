package dev.idem.servlet;

import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.AttemptResult;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.StoredResponse;
import dev.idem.core.StoredResponseUnreadableException;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Idem's own answers as problems, in one place: every problem's name, status, title and detail,
 * and the one mapping from what an engine said to a problem, which the filter ({@link
 * IdempotencyFilter}, from an {@link AttemptResult}) and the Spring starter's exception resolver
 * for {@code @Idempotent} methods (from the engines' exceptions) both use, so the same event gets
 * the same answer on both paths.
 *
 * <p>Statuses follow draft-ietf-httpapi-idempotency-key-header-07 section 2.7: 400 for a missing
 * or malformed key, 409 for a request still in progress, 422 for a key reused with another
 * payload. Idem's own failures answer 503 when a retry with the same key is safe and may succeed
 * (a {@code Retry-After} field says when), 500 when a retry cannot help. Problem types are the
 * configured base plus the name ({@link IdempotencyFilterConfig.Builder#problemTypeBase}; RFC 9457
 * section 3.1.1).
 *
 * <p>Immutable and thread-safe.
 */
public final class IdemProblems {

  /** The filter's logger: a failing renderer is logged as the filter's. */
  private static final System.Logger LOG = System.getLogger(IdempotencyFilter.class.getName());

  /** A required key is absent: 400. */
  public static final String KEY_MISSING = "idempotency-key-missing";
  /** The key field is not a valid key: 400. */
  public static final String KEY_MALFORMED = "idempotency-key-malformed";
  /** The body does not parse as its declared media type: 400. */
  public static final String PAYLOAD_INVALID = "payload-invalid";
  /** A request with the same key is still being processed: 409, with {@code Retry-After}. */
  public static final String IN_PROGRESS = "request-in-progress";
  /** The request body is over the limit: 413. */
  public static final String BODY_TOO_LARGE = "body-too-large";
  /** The key was used with another payload: 422. */
  public static final String KEY_REUSED = "idempotency-key-reused";
  /** The key could not be checked or the transaction not committed, nothing kept: 503. */
  public static final String STORE_UNAVAILABLE = "store-unavailable";
  /** The key's first answer was too large to store, so it cannot be replayed, and it is not run again: 422. */
  public static final String RESPONSE_TOO_LARGE = "response-too-large-to-replay";
  /** Whether the request took effect cannot be told; a retry with the same key settles it: 503. */
  public static final String OUTCOME_UNKNOWN = "outcome-unknown";
  /** The request failed by itself and was rolled back: 500. */
  public static final String REQUEST_FAILED = "request-failed";
  /** The key's stored response cannot be authenticated or decoded: 500. */
  public static final String STORED_RESPONSE_UNREADABLE = "stored-response-unreadable";

  /**
   * One of Idem's answers: the problem, and the {@code Retry-After} field to send with it.
   *
   * @param problem never {@code null}
   * @param retryAfterSeconds the {@code Retry-After} delay in seconds (RFC 9110 section 10.2.3),
   *     or empty for none
   */
  public record Answer(IdemProblem problem, OptionalLong retryAfterSeconds) {
    /** @throws NullPointerException if an argument is {@code null} */
    public Answer {
      Objects.requireNonNull(problem, "problem");
      Objects.requireNonNull(retryAfterSeconds, "retryAfterSeconds");
    }
  }

  private final IdempotencyFilterConfig config;

  /**
   * @param config the problem type base, renderer and {@code Retry-After} bound, never {@code null}
   * @throws NullPointerException if {@code config} is {@code null}
   */
  public IdemProblems(IdempotencyFilterConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /**
   * @param subject what requires the key, such as {@code "POST /orders"} or {@code "this
   *     operation"}, never {@code null}
   * @return 400 {@value #KEY_MISSING}
   */
  public IdemProblem keyMissing(String subject) {
    return problem(KEY_MISSING, "Idempotency-Key is missing", 400, subject
        + " requires an Idempotency-Key request header field: send a unique key, such as a UUID, and the same key on every retry");
  }

  /**
   * @param reason the broken rule, which never quotes the key, never {@code null}
   * @return 400 {@value #KEY_MALFORMED}
   */
  public IdemProblem keyMalformed(String reason) {
    return problem(KEY_MALFORMED, "Idempotency-Key is malformed", 400, reason);
  }

  /**
   * @param detail why the body cannot be read as its media type, never {@code null}
   * @return 400 {@value #PAYLOAD_INVALID}
   */
  public IdemProblem payloadInvalid(String detail) {
    return problem(PAYLOAD_INVALID, "Request body does not match its media type", 400, detail);
  }

  /**
   * @param detail which limit the body is over, never {@code null}
   * @return 413 {@value #BODY_TOO_LARGE}
   */
  public IdemProblem bodyTooLarge(String detail) {
    return problem(BODY_TOO_LARGE, "Request body is too large", 413, detail);
  }

  /** @return 422 {@value #KEY_REUSED} */
  public IdemProblem keyReused() {
    return problem(KEY_REUSED, "Idempotency-Key is already used", 422, "this Idempotency-Key was already used with a different"
        + " request (method, target, media type or body); use a new key for a new request");
  }

  /**
   * The same problem as {@link #keyReused()} in the words of an {@code @Idempotent} method, whose
   * payload is its arguments, not an HTTP request's method, target, media type and body.
   *
   * @return 422 {@value #KEY_REUSED}
   */
  public IdemProblem keyReusedWithOtherArguments() {
    return problem(KEY_REUSED, "Idempotency-Key is already used", 422, "this Idempotency-Key was already used for this"
        + " operation with other arguments; use a new key for a new call");
  }

  /** @return 409 {@value #IN_PROGRESS}, to send with {@code Retry-After: seconds} */
  public IdemProblem inProgress(long seconds) {
    return problem(IN_PROGRESS, "A request is outstanding for this Idempotency-Key", 409,
        "a request with the same Idempotency-Key is still being processed; retry after " + seconds(seconds));
  }

  /** @return 503 {@value #STORE_UNAVAILABLE}: the key could not be checked, the request was not processed */
  public IdemProblem storeUnavailable() {
    return problem(STORE_UNAVAILABLE, "Idempotency store is unavailable", 503,
        "the request was not processed because its Idempotency-Key could not be checked; retry later with the same key");
  }

  /**
   * @return 503 {@value #STORE_UNAVAILABLE} for a store failure out of an {@code @Idempotent}
   *     method: the engines throw a store failure only when nothing of the call was kept (before it
   *     ran, or rolled back with its writes); a call that ran and may have taken effect is {@link
   *     #outcomeUnknown} instead. A retry with the same key is safe
   */
  public IdemProblem storeFailed() {
    return problem(STORE_UNAVAILABLE, "Idempotency store is unavailable", 503, "the request was not processed: the idempotency"
        + " store could not be used, and nothing of the request was kept; retry later with the same key");
  }

  /** @return 503 {@value #STORE_UNAVAILABLE}: the transaction did not commit, nothing was kept */
  public IdemProblem notCommitted() {
    return problem(STORE_UNAVAILABLE, "Idempotency store is unavailable", 503,
        "the request was not processed: its transaction could not be committed; retry later with the same key");
  }

  /**
   * @param seconds the {@code Retry-After} to send with it, at least 1
   * @param phase which write is in doubt: {@link OutcomeUnknownException.Phase#COMPLETION} (lease
   *     mode: the request was processed, its result not recorded) or {@link
   *     OutcomeUnknownException.Phase#COMMIT} (transactional mode: the commit's acknowledgement was
   *     lost) or {@link OutcomeUnknownException.Phase#PARTIAL} (an operation of steps stopped after
   *     some of them), never {@code null}
   * @return 503 {@value #OUTCOME_UNKNOWN}: a retry with the same key is safe, one with a new key is not
   */
  public IdemProblem outcomeUnknown(long seconds, OutcomeUnknownException.Phase phase) {
    if (phase == OutcomeUnknownException.Phase.PARTIAL) {
      return problem(OUTCOME_UNKNOWN, "Outcome of the request is unknown", 503, "the request was processed in part and stopped;"
          + " its completed steps are recorded. Retry with the same Idempotency-Key after " + seconds(seconds) + ": the retry"
          + " resumes it after its last completed step and returns its answer. Do not send it with a new key");
    }
    String detail = phase == OutcomeUnknownException.Phase.COMPLETION
        ? "the request was processed, but its result could not be recorded, so its outcome cannot be confirmed; retry with the same"
            + " Idempotency-Key after " + seconds(seconds) + ": the retry gets the recorded answer or completes the same operation."
            + " Do not send it with a new key"
        : "the outcome of the request is unknown: its transaction was sent for commit but the acknowledgement was lost."
            + " A retry with the same Idempotency-Key is safe: it returns the stored response if the request was"
            + " committed, and processes it once if it was not";
    return problem(OUTCOME_UNKNOWN, "Outcome of the request is unknown", 503, detail);
  }

  /** @return 500 {@value #REQUEST_FAILED}: the request itself failed and was rolled back */
  public IdemProblem requestFailed() {
    return problem(REQUEST_FAILED, "The request failed", 500,
        "the request failed and was rolled back: nothing of it was kept and nothing was stored for its Idempotency-Key."
            + " The same request would fail the same way");
  }

  /** @return 500 {@value #STORED_RESPONSE_UNREADABLE}: never replayed, never run again */
  public IdemProblem storedResponseUnreadable() {
    return problem(STORED_RESPONSE_UNREADABLE, "The stored response cannot be read", 500,
        "the request with this Idempotency-Key was already processed, but its recorded answer cannot be read;"
            + " it is not run again and no answer is replayed");
  }

  /**
   * The answer to a retry whose first answer was too large to store: never an empty or cut body
   * under the original status, and never a second run.
   *
   * @param stored the key's record, without its body ({@link StoredResponse#bodyStored()} false)
   * @return 422 {@value #RESPONSE_TOO_LARGE}, with the members {@code originalStatus}, and where
   *     known {@code originalBodyBytes} and {@code originalLocation}. A 4xx, not a 5xx: the request
   *     was processed and its answer is gone, so a retry with the same key can never get it, and
   *     retrying clients (stripe-java among them) retry a 5xx again; 422, as for a key reused with
   *     another request, tells them not to resend this key, and no common client retries it
   */
  public IdemProblem responseTooLarge(StoredResponse stored) {
    long bytes = stored.answeredBodyLength();
    String location = stored.header("Location");
    Map<String, Object> members = new LinkedHashMap<>();
    members.put("originalStatus", stored.status());
    if (bytes >= 0) {
      members.put("originalBodyBytes", bytes);
    }
    if (location != null) {
      members.put("originalLocation", location);
    }
    return config.problem(RESPONSE_TOO_LARGE, "The stored response is too large to replay", 422,
        "the request with this Idempotency-Key was already processed and answered with status " + stored.status()
            + (bytes >= 0 ? " and a body of " + bytes + " bytes" : "") + ", too large to be stored for replays;"
            + " it is not run again, and its answer cannot be sent again, so do not resend this key"
            + (location != null ? ": the answer's Location was " + location : ": look its result up another way"),
        members);
  }

  /**
   * @param originalStatus the status the operation answered the first time
   * @return 422 {@value #RESPONSE_TOO_LARGE} for an {@code @Idempotent} method whose answer was too
   *     large to store ({@link ResponseNotStoredException}), with the member {@code originalStatus}
   */
  public IdemProblem responseNotStored(int originalStatus) {
    return config.problem(RESPONSE_TOO_LARGE, "The stored response is too large to replay", 422,
        "the operation of this idempotency key already ran and answered with status " + originalStatus
            + ", but its answer was too large to store; it is not run again: look the result up another way",
        Map.of("originalStatus", originalStatus));
  }

  /**
   * The one mapping from an engine's result to Idem's answer, for a result that is not the
   * handler's own answer.
   *
   * @param result a result of kind {@code KEY_REUSED}, {@code IN_PROGRESS}, {@code
   *     OUTCOME_UNKNOWN}, {@code ROLLED_BACK}, {@code REQUEST_FAILED},
   *     {@code STORED_RESPONSE_UNREADABLE} or {@code STORE_UNAVAILABLE}
   * @return the problem and its {@code Retry-After}, never {@code null}
   * @throws IllegalArgumentException if the result is an answer ({@code EXECUTED}, {@code
   *     RELEASED}, {@code REPLAYED}), which has no problem
   */
  public Answer forResult(AttemptResult result) {
    switch (result.kind()) {
      case KEY_REUSED:
        return plain(keyReused());
      case IN_PROGRESS: {
        long seconds = config.retryAfterSeconds(result.retryAfter());
        return new Answer(inProgress(seconds), OptionalLong.of(seconds));
      }
      case OUTCOME_UNKNOWN: {
        long seconds = Math.max(1, result.retryAfter().toSeconds());
        return new Answer(outcomeUnknown(seconds, phaseOf(result)), OptionalLong.of(seconds));
      }
      case REQUEST_FAILED:
        return plain(requestFailed());
      case ROLLED_BACK:
        return plain(notCommitted());
      case STORED_RESPONSE_UNREADABLE:
        return plain(storedResponseUnreadable());
      case STORE_UNAVAILABLE:
        return plain(storeUnavailable());
      default:
        throw new IllegalArgumentException("a " + result.kind() + " result is an answer, not a problem");
    }
  }

  /**
   * @return the phase of an {@code OUTCOME_UNKNOWN} result: its exception's, or {@code COMPLETION}
   *     for a lease taken over before the completion
   */
  static OutcomeUnknownException.Phase phaseOf(AttemptResult result) {
    return result.failure().filter(OutcomeUnknownException.class::isInstance).map(OutcomeUnknownException.class::cast)
        .map(OutcomeUnknownException::phase).orElse(OutcomeUnknownException.Phase.COMPLETION);
  }

  /**
   * The same mapping for the exceptions the engines throw ({@code execute}, {@link
   * AttemptResult#outcomeOrThrow()}, {@code @Idempotent} methods).
   *
   * @param failure any throwable, never {@code null}
   * @return Idem's answer, or empty if {@code failure} is not one of Idem's exceptions (the
   *     application's own, to be handled as it would be without Idem); an unknown outcome that an
   *     HTTP client the application called threw ({@link OutcomeUnknownException#thrownByClient})
   *     is the application's own
   */
  public Optional<Answer> forException(Throwable failure) {
    if (OutcomeUnknownException.thrownByClient(failure)) {
      // A call the application made to another service: not Idem's answer to this request.
      return Optional.empty();
    }
    if (failure instanceof IdempotencyKeyReusedException) {
      return Optional.of(plain(keyReused()));
    }
    if (failure instanceof InvalidIdempotencyKeyException) {
      // Its message names the broken rule, never the key: safe to return.
      return Optional.of(plain(keyMalformed(String.valueOf(failure.getMessage()))));
    }
    if (failure instanceof RequestInProgressException busy) {
      long seconds = config.retryAfterSeconds(busy.retryAfter());
      return Optional.of(new Answer(inProgress(seconds), OptionalLong.of(seconds)));
    }
    if (failure instanceof ResponseNotStoredException notStored) {
      // The key is completed: the operation ran once and must not run again.
      return Optional.of(plain(responseNotStored(notStored.originalStatus())));
    }
    if (failure instanceof OutcomeUnknownException unknown) {
      long seconds = Math.max(1, unknown.retryAfter().toSeconds());
      return Optional.of(new Answer(outcomeUnknown(seconds, unknown.phase()), OptionalLong.of(seconds)));
    }
    if (failure instanceof StoredResponseUnreadableException) {
      return Optional.of(plain(storedResponseUnreadable()));
    }
    if (failure instanceof IdemStoreException) {
      return Optional.of(plain(storeFailed()));
    }
    return Optional.empty();
  }

  /**
   * Sends {@code answer}: its {@code Retry-After} field, then the problem with the configured
   * renderer; a renderer that fails before it wrote anything is replaced, for this answer, by RFC
   * 9457 problem details ({@link ProblemRenderer#rfc9457()}), so that a broken renderer never
   * turns a refusal into a 500 with a stack trace. Header fields already set on the response stay.
   *
   * @param response an uncommitted response
   * @throws IOException if writing fails
   */
  public void send(Answer answer, HttpServletResponse response) throws IOException {
    answer.retryAfterSeconds().ifPresent(seconds -> response.setHeader(IdempotencyHeaders.RETRY_AFTER, Long.toString(seconds)));
    render(config.problemRenderer(), answer.problem(), response);
  }

  private static void render(ProblemRenderer renderer, IdemProblem problem, HttpServletResponse res) throws IOException {
    try {
      renderer.render(problem, res);
    } catch (RuntimeException e) {
      if (res.isCommitted()) {
        throw e;
      }
      LOG.log(Level.WARNING, "idempotency filter: the application's ProblemRenderer failed; answering with RFC 9457 problem details", e);
      res.resetBuffer();
      ProblemRenderer.rfc9457().render(problem, res);
    }
  }

  /** Sends {@code problem} without a {@code Retry-After} field; as {@link #send(Answer, HttpServletResponse)}. */
  public void send(IdemProblem problem, HttpServletResponse response) throws IOException {
    send(plain(problem), response);
  }

  private static Answer plain(IdemProblem problem) {
    return new Answer(problem, OptionalLong.empty());
  }

  private IdemProblem problem(String name, String title, int status, String detail) {
    return config.problem(name, title, status, detail, Map.of());
  }

  /** @return "1 second" or "N seconds" */
  static String seconds(long seconds) {
    return seconds == 1 ? "1 second" : seconds + " seconds";
  }
}
