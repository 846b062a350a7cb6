package dev.idem.spring;

import dev.idem.core.CompletionUnknownException;
import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.servlet.IdempotencyFilter;
import dev.idem.servlet.IdempotencyFilterConfig;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;

/**
 * Answers Idem's refusals that reach Spring MVC from {@link Idempotent} methods (or from the
 * application's own use of the engines) as the filter answers them: RFC 9457 problem details
 * ({@code application/problem+json}) with the filter's problem types, under the configured base
 * ({@link IdempotencyFilterConfig#problemType(String)}, {@code idem.problem-type-base}):
 *
 * <table>
 *   <caption>Exceptions and answers</caption>
 *   <tr><th>exception</th><th>status</th><th>problem type</th></tr>
 *   <tr><td>{@link IdempotencyKeyReusedException}</td><td>422</td><td>idempotency-key-reused</td></tr>
 *   <tr><td>{@link IdempotencyKeyMissingException}</td><td>400</td><td>idempotency-key-missing</td></tr>
 *   <tr><td>{@link InvalidIdempotencyKeyException}</td><td>400</td><td>idempotency-key-malformed</td></tr>
 *   <tr><td>{@link RequestInProgressException}</td><td>409, with {@code Retry-After} ({@link
 *       IdempotencyFilterConfig#retryAfterSeconds})</td><td>request-in-progress</td></tr>
 *   <tr><td>{@link CompletionUnknownException}</td><td>503, with {@code Retry-After}</td><td>outcome-unknown</td></tr>
 *   <tr><td>{@link dev.idem.core.StoredResponseUnreadableException}</td><td>500</td><td>stored-response-unreadable</td></tr>
 *   <tr><td>{@link IdemStoreException} (any other)</td><td>503</td><td>store-unavailable</td></tr>
 *   <tr><td>{@link ResponseNotStoredException}</td><td>500</td><td>response-too-large-to-replay</td></tr>
 * </table>
 *
 * <p>Ordered after Spring MVC's own resolvers ({@link Ordered#LOWEST_PRECEDENCE}): an {@code
 * @ExceptionHandler} of the application, in a controller or a {@code @ControllerAdvice}, for one of
 * these exceptions (or a supertype) wins. Any other exception, and any exception once the response
 * is committed, is left to the next resolver. Thread-safe.
 */
public final class IdemHandlerExceptionResolver implements HandlerExceptionResolver, Ordered {

  private static final Logger LOG = LoggerFactory.getLogger(IdemHandlerExceptionResolver.class);

  private static final String KEY_MISSING = name(IdempotencyFilter.PROBLEM_KEY_MISSING);
  private static final String KEY_MALFORMED = name(IdempotencyFilter.PROBLEM_KEY_MALFORMED);
  private static final String IN_PROGRESS = name(IdempotencyFilter.PROBLEM_IN_PROGRESS);
  private static final String KEY_REUSED = name(IdempotencyFilter.PROBLEM_KEY_REUSED);
  private static final String STORE_UNAVAILABLE = name(IdempotencyFilter.PROBLEM_STORE_UNAVAILABLE);
  private static final String RESPONSE_TOO_LARGE = name(IdempotencyFilter.PROBLEM_RESPONSE_TOO_LARGE);
  private static final String OUTCOME_UNKNOWN = name(IdempotencyFilter.PROBLEM_OUTCOME_UNKNOWN);
  private static final String STORED_RESPONSE_UNREADABLE = name(IdempotencyFilter.PROBLEM_STORED_RESPONSE_UNREADABLE);

  private final IdempotencyFilterConfig config;

  /**
   * @param config the problem type base and the {@code Retry-After} bound, never {@code null}
   * @throws NullPointerException if {@code config} is {@code null}
   */
  public IdemHandlerExceptionResolver(IdempotencyFilterConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  private static String name(String defaultType) {
    return defaultType.substring(IdempotencyFilter.PROBLEM_TYPE_BASE.length());
  }

  /** @return {@link Ordered#LOWEST_PRECEDENCE}: after Spring MVC's own resolvers */
  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }

  @Override
  public @Nullable ModelAndView resolveException(HttpServletRequest request, HttpServletResponse response, @Nullable Object handler,
      Exception ex) {
    if (response.isCommitted()) {
      return null;
    }
    try {
      if (ex instanceof IdempotencyKeyReusedException) {
        write(response, KEY_REUSED, "Idempotency-Key is already used", 422,
            "this idempotency key was already used with a different request; use a new key for a new request");
      } else if (ex instanceof IdempotencyKeyMissingException) {
        write(response, KEY_MISSING, "Idempotency-Key is missing", 400,
            "this operation requires an idempotency key: send a unique key, such as a UUID, and the same key on every retry");
      } else if (ex instanceof InvalidIdempotencyKeyException) {
        // Its message names the broken rule, never the key: safe to return.
        write(response, KEY_MALFORMED, "Idempotency-Key is malformed", 400, ex.getMessage());
      } else if (ex instanceof RequestInProgressException busy) {
        long seconds = config.retryAfterSeconds(busy.retryAfter());
        response.resetBuffer();
        response.setHeader("Retry-After", Long.toString(seconds));
        writeProblem(response, IN_PROGRESS, "A request is outstanding for this Idempotency-Key", 409,
            "a request with the same idempotency key is still being processed; retry after " + seconds + " seconds");
      } else if (ex instanceof ResponseNotStoredException notStored) {
        // The key is completed: the operation ran once and must not run again (issue: answers over
        // the limit ran twice). The detail names the original status, never the key.
        write(response, RESPONSE_TOO_LARGE, "The stored response is too large to replay", 500,
            "the operation of this idempotency key already ran and answered with status " + notStored.originalStatus()
                + ", but its answer was too large to store; it is not run again: look the result up another way");
      } else if (ex instanceof CompletionUnknownException unknown) {
        // Lease mode: the method ran but its result could not be stored within the lease.
        long seconds = Math.max(1, unknown.retryAfter().toSeconds());
        response.resetBuffer();
        response.setHeader("Retry-After", Long.toString(seconds));
        writeProblem(response, OUTCOME_UNKNOWN, "Outcome of the request is unknown", 503,
            "the request was processed, but its result could not be recorded, so its outcome cannot be confirmed; retry with the same"
                + " Idempotency-Key after " + seconds + " seconds: the retry gets the recorded answer or completes the same operation");
      } else if (ex instanceof StoredResponseUnreadableException) {
        // The key is answered but its stored response cannot be authenticated or decoded: never
        // replayed, never run again, and not a 503 that clients would retry in vain.
        LOG.error("Idem: a stored response cannot be read; answering 500", ex);
        write(response, STORED_RESPONSE_UNREADABLE, "The stored response cannot be read", 500,
            "the operation of this idempotency key already ran, but its recorded result cannot be read; it is not run again");
      } else if (ex instanceof IdemStoreException) {
        LOG.warn("Idem: the idempotency store failed; answering 503", ex);
        write(response, STORE_UNAVAILABLE, "Idempotency store is unavailable", 503,
            "the idempotency store could not be used, so whether the operation ran is not known;"
                + " retry later with the same key, which is safe");
      } else {
        return null;
      }
    } catch (IOException | RuntimeException writeFailure) {
      ex.addSuppressed(writeFailure);
      return null;
    }
    return new ModelAndView();
  }

  private void write(HttpServletResponse response, String name, String title, int status, String detail) throws IOException {
    response.resetBuffer();
    writeProblem(response, name, title, status, detail);
  }

  private void writeProblem(HttpServletResponse response, String name, String title, int status, String detail) throws IOException {
    IdempotencyFilter.render(config.problemRenderer(), config.problem(name, title, status, detail, java.util.Map.of()), response);
  }
}
