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
import dev.idem.core.http.ProblemCatalog;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Idem's own answers as problems, shaped by a filter's configuration: every problem's name, status,
 * title and detail (from {@link ProblemCatalog}, which the WebFlux filter uses too), and the one
 * mapping from what an engine said to a problem, which the filter ({@link
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
  public static final String KEY_MISSING = ProblemCatalog.KEY_MISSING;
  /** The key field is not a valid key: 400. */
  public static final String KEY_MALFORMED = ProblemCatalog.KEY_MALFORMED;
  /** The body does not parse as its declared media type: 400. */
  public static final String PAYLOAD_INVALID = ProblemCatalog.PAYLOAD_INVALID;
  /** A request with the same key is still being processed: 409, with {@code Retry-After}. */
  public static final String IN_PROGRESS = ProblemCatalog.IN_PROGRESS;
  /** The request body is over the limit: 413. */
  public static final String BODY_TOO_LARGE = ProblemCatalog.BODY_TOO_LARGE;
  /** The key was used with another payload: 422. */
  public static final String KEY_REUSED = ProblemCatalog.KEY_REUSED;
  /** The key could not be checked or the transaction not committed, nothing kept: 503. */
  public static final String STORE_UNAVAILABLE = ProblemCatalog.STORE_UNAVAILABLE;
  /** The key's first answer was too large to store, so it cannot be replayed, and it is not run again: 422. */
  public static final String RESPONSE_TOO_LARGE = ProblemCatalog.RESPONSE_TOO_LARGE;
  /** Whether the request took effect cannot be told; a retry with the same key settles it: 503. */
  public static final String OUTCOME_UNKNOWN = ProblemCatalog.OUTCOME_UNKNOWN;
  /** The request failed by itself and was rolled back: 500. */
  public static final String REQUEST_FAILED = ProblemCatalog.REQUEST_FAILED;
  /** The key's stored response cannot be authenticated or decoded: 500. */
  public static final String STORED_RESPONSE_UNREADABLE = ProblemCatalog.STORED_RESPONSE_UNREADABLE;

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
    return of(ProblemCatalog.keyMissing(subject));
  }

  /**
   * @param reason the broken rule, which never quotes the key, never {@code null}
   * @return 400 {@value #KEY_MALFORMED}
   */
  public IdemProblem keyMalformed(String reason) {
    return of(ProblemCatalog.keyMalformed(reason));
  }

  /**
   * @param detail why the body cannot be read as its media type, never {@code null}
   * @return 400 {@value #PAYLOAD_INVALID}
   */
  public IdemProblem payloadInvalid(String detail) {
    return of(ProblemCatalog.payloadInvalid(detail));
  }

  /**
   * @param detail which limit the body is over, never {@code null}
   * @return 413 {@value #BODY_TOO_LARGE}
   */
  public IdemProblem bodyTooLarge(String detail) {
    return of(ProblemCatalog.bodyTooLarge(detail));
  }

  /** @return 422 {@value #KEY_REUSED} */
  public IdemProblem keyReused() {
    return of(ProblemCatalog.keyReused());
  }

  /**
   * The same problem as {@link #keyReused()} in the words of an {@code @Idempotent} method, whose
   * payload is its arguments, not an HTTP request's method, target, media type and body.
   *
   * @return 422 {@value #KEY_REUSED}
   */
  public IdemProblem keyReusedWithOtherArguments() {
    return of(ProblemCatalog.keyReusedWithOtherArguments());
  }

  /** @return 409 {@value #IN_PROGRESS}, to send with {@code Retry-After: seconds} */
  public IdemProblem inProgress(long seconds) {
    return of(ProblemCatalog.inProgress(seconds));
  }

  /** @return 503 {@value #STORE_UNAVAILABLE}: the key could not be checked, the request was not processed */
  public IdemProblem storeUnavailable() {
    return of(ProblemCatalog.storeUnavailable());
  }

  /**
   * @return 503 {@value #STORE_UNAVAILABLE} for a store failure out of an {@code @Idempotent}
   *     method: the engines throw a store failure only when nothing of the call was kept (before it
   *     ran, or rolled back with its writes); a call that ran and may have taken effect is {@link
   *     #outcomeUnknown} instead. A retry with the same key is safe
   */
  public IdemProblem storeFailed() {
    return of(ProblemCatalog.storeFailed());
  }

  /** @return 503 {@value #STORE_UNAVAILABLE}: the transaction did not commit, nothing was kept */
  public IdemProblem notCommitted() {
    return of(ProblemCatalog.notCommitted());
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
    return of(ProblemCatalog.outcomeUnknown(seconds, phase));
  }

  /** @return 500 {@value #REQUEST_FAILED}: the request itself failed and was rolled back */
  public IdemProblem requestFailed() {
    return of(ProblemCatalog.requestFailed());
  }

  /** @return 500 {@value #STORED_RESPONSE_UNREADABLE}: never replayed, never run again */
  public IdemProblem storedResponseUnreadable() {
    return of(ProblemCatalog.storedResponseUnreadable());
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
    return of(ProblemCatalog.responseTooLarge(stored));
  }

  /**
   * @param originalStatus the status the operation answered the first time
   * @return 422 {@value #RESPONSE_TOO_LARGE} for an {@code @Idempotent} method whose answer was too
   *     large to store ({@link ResponseNotStoredException}), with the member {@code originalStatus}
   */
  public IdemProblem responseNotStored(int originalStatus) {
    return of(ProblemCatalog.responseNotStored(originalStatus));
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
    ProblemCatalog.Answer answer = ProblemCatalog.forResult(result, config::retryAfterSeconds);
    return new Answer(of(answer.problem()), answer.retryAfterSeconds());
  }

  /**
   * @return the phase of an {@code OUTCOME_UNKNOWN} result: its exception's, or {@code COMPLETION}
   *     for a lease taken over before the completion
   */
  static OutcomeUnknownException.Phase phaseOf(AttemptResult result) {
    return ProblemCatalog.phaseOf(result);
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

  /** @return {@code entry} shaped by the configuration: its type under the configured base, or about:blank */
  private IdemProblem of(ProblemCatalog.Entry entry) {
    return config.problem(entry.name(), entry.title(), entry.status(), entry.detail(), entry.extensions());
  }
}
