package dev.idem.spring.web;

import dev.idem.core.IdemStoreException;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.servlet.IdemProblems;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.IdempotencyKeyMissingException;
import dev.idem.spring.Idempotent;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
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
 * ({@code idem.problem-type-base}). The mapping is the filter's own, {@link IdemProblems}, so the
 * same event gets the same answer on both paths:
 *
 * <table>
 *   <caption>Exceptions and answers</caption>
 *   <tr><th>exception</th><th>status</th><th>problem type</th></tr>
 *   <tr><td>{@link IdempotencyKeyReusedException}</td><td>422, its detail speaking of the method's
 *       arguments ({@link IdemProblems#keyReusedWithOtherArguments()})</td><td>idempotency-key-reused</td></tr>
 *   <tr><td>{@link IdempotencyKeyMissingException}</td><td>400</td><td>idempotency-key-missing</td></tr>
 *   <tr><td>{@link InvalidIdempotencyKeyException}</td><td>400</td><td>idempotency-key-malformed</td></tr>
 *   <tr><td>{@link RequestInProgressException}</td><td>409, with {@code Retry-After} ({@link
 *       IdempotencyFilterConfig#retryAfterSeconds})</td><td>request-in-progress</td></tr>
 *   <tr><td>{@link OutcomeUnknownException}</td><td>503, with {@code Retry-After}</td><td>outcome-unknown</td></tr>
 *   <tr><td>{@link dev.idem.core.StoredResponseUnreadableException}</td><td>500</td><td>stored-response-unreadable</td></tr>
 *   <tr><td>{@link IdemStoreException} (any other)</td><td>503</td><td>store-unavailable</td></tr>
 *   <tr><td>{@link ResponseNotStoredException}</td><td>422</td><td>response-too-large-to-replay</td></tr>
 * </table>
 *
 * <p>Ordered after Spring MVC's own resolvers ({@link Ordered#LOWEST_PRECEDENCE}): an {@code
 * @ExceptionHandler} of the application, in a controller or a {@code @ControllerAdvice}, for one of
 * these exceptions (or a supertype) wins. Any other exception, and any exception once the response
 * is committed, is left to the next resolver. Thread-safe.
 */
final class IdemHandlerExceptionResolver implements HandlerExceptionResolver, Ordered {

  private static final Logger LOG = LoggerFactory.getLogger(IdemHandlerExceptionResolver.class);

  private final IdempotencyFilterConfig config;

  /**
   * @param config the problem type base and the {@code Retry-After} bound, never {@code null}
   * @throws NullPointerException if {@code config} is {@code null}
   */
  IdemHandlerExceptionResolver(IdempotencyFilterConfig config) {
    this.config = Objects.requireNonNull(config, "config");
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
    IdemProblems problems = config.problems();
    Optional<IdemProblems.Answer> answer;
    if (ex instanceof IdempotencyKeyMissingException) {
      answer = Optional.of(new IdemProblems.Answer(problems.keyMissing("this operation"), OptionalLong.empty()));
    } else if (ex instanceof IdempotencyKeyReusedException) {
      // The filter answers its own reused keys; one that reaches Spring MVC comes from a method
      // (or the application's own use of an engine), whose payload is its arguments.
      answer = Optional.of(new IdemProblems.Answer(problems.keyReusedWithOtherArguments(), OptionalLong.empty()));
    } else {
      answer = problems.forException(ex);
    }
    if (answer.isEmpty()) {
      return null; // the application's own exception
    }
    if (ex instanceof StoredResponseUnreadableException) {
      // The key is answered but its stored response cannot be authenticated or decoded: never
      // replayed, never run again, and not a 503 that clients would retry in vain.
      LOG.error("Idem: a stored response cannot be read; answering 500", ex);
    } else if (ex instanceof IdemStoreException) {
      LOG.warn("Idem: the idempotency store failed; answering 503", ex);
    }
    try {
      response.resetBuffer();
      problems.send(answer.get(), response);
    } catch (IOException | RuntimeException writeFailure) {
      ex.addSuppressed(writeFailure);
      return null;
    }
    return new ModelAndView();
  }
}
